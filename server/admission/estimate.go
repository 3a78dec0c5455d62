package admission

import (
	"cmp"
	"slices"
)

// Held is an open session as the wait estimate sees it.
type Held struct {
	// Remaining is the estimated time until the session ends and frees its
	// caches, in seconds (T_r^j(t) of paper 003 eq. 20).
	Remaining float64
	// Bytes is the attention-cache bytes it holds: k_r * s_c (M_r^j(t)
	// caches of s_c bytes each in eq. 20).
	Bytes int64
}

// Pending is a queued session as the wait estimate sees it.
type Pending struct {
	// Duration is the estimated time the session will hold its caches once
	// admitted, in seconds.
	Duration float64
	// Bytes is the attention-cache bytes it needs.
	Bytes int64
}

// EstimateWait returns the estimated time in seconds until the waiter at
// queue[index] is admitted, assuming each open session frees its caches
// after its Remaining time and each queued session ahead of the waiter is
// admitted in FIFO order as soon as it fits and then holds its caches for
// its Duration.
//
// budget is the cache memory M - s_m*m in bytes; maxSessions caps the open
// sessions (0 = no cap). For the head of an empty-ahead queue this is paper
// 003 eq. (20) in bytes:
//
//	t^W = min{ T_k : budget - sum_{r>k} Bytes_r >= need }, T_0 = 0,
//
// with open sessions sorted by increasing T_r; the paper counts caches of
// one size s_c, here sessions of different max_length hold different bytes.
// It returns -1 if the waiter can never be admitted (a queued session needs
// more than budget on its own), and 0 for an index outside queue.
func EstimateWait(budget int64, maxSessions int, open []Held, queue []Pending, index int) float64 {
	if index < 0 || index >= len(queue) {
		return 0
	}
	type release struct {
		at    float64
		bytes int64
	}
	active := make([]release, 0, len(open)+index+1)
	var used int64
	for _, h := range open {
		active = append(active, release{at: max(h.Remaining, 0), bytes: h.Bytes})
		used += h.Bytes
	}
	fits := func(need int64) bool {
		return used+need <= budget && (maxSessions <= 0 || len(active) < maxSessions)
	}
	now := 0.0
	for next := 0; ; {
		for next <= index && fits(queue[next].Bytes) {
			if next == index {
				return now
			}
			active = append(active, release{at: now + max(queue[next].Duration, 0), bytes: queue[next].Bytes})
			used += queue[next].Bytes
			next++
		}
		if len(active) == 0 {
			return -1 // queue[next] needs more than the whole budget
		}
		// Advance to the earliest release and free every session ending then.
		slices.SortFunc(active, func(a, b release) int { return cmp.Compare(a.at, b.at) })
		now = active[0].at
		for len(active) > 0 && active[0].at <= now {
			used -= active[0].bytes
			active = active[1:]
		}
	}
}
