// Package admission is a server's admission controller: it decides when a
// new session's attention caches fit, following the memory model of paper
// 003 eq. (2). A server holding m blocks of s_m bytes each within M bytes of
// memory admits sessions while
//
//	s_m*m + sum over open sessions r of sum_{b in span_r} s_c(b, max_length_r) <= M      (2)
//
// where span_r is the blocks the server processes for r and s_c(b, l) is
// swarm.ModelInfo.BlockCacheBytes(b, l): CacheBytes(l) for a full-attention
// block, less for a sliding-window block (the paper's k_r * s_c when every
// block is global), optionally also capped at a number
// of open sessions. A session that does not fit waits in a FIFO queue for up
// to its alloc_timeout; one that can never fit is refused at once
// (ErrNeverFits). The wait is observable: each waiter's position and an
// estimated wait computed from the open sessions' estimated remaining times
// (paper 003 eq. 20, applied to the whole queue), and the controller exposes
// the load a server advertises (swarm.SessionLoad per open session, cache
// bytes free).
//
// The controller only accounts memory; it allocates nothing. Time comes from
// the time package, so tests run it inside testing/synctest bubbles.
//
// This package must never import net, net/http, the wire codec, the block
// engine or any package of this repository other than swarm: it is the
// bookkeeping core that server/ drives.
package admission
