package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/swarm"
)

// ErrBadFleet is matched (errors.Is) by every error for a fleet file that
// does not follow the schema; such errors are an *Error.
var ErrBadFleet = errors.New("fleet: bad fleet file")

// Error is a fleet file that breaks the schema. It matches ErrBadFleet
// without repeating that sentinel's text, so it reads "bad fleet file:
// PATH: WHY".
type Error struct {
	// Path names the file.
	Path string
	// Err names the bad field and what is wanted.
	Err error
}

func (e *Error) Error() string { return "bad fleet file: " + e.Path + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrBadFleet.
func (e *Error) Is(target error) bool { return target == ErrBadFleet }

// Schema describes the fleet file for people, with an example of every
// field (`swarm plan --help` prints it).
const Schema = `Fleet file (JSON; units: bytes and seconds; unknown fields are errors):
  {
    "model": {"blocks": 70,                    L, transformer blocks
              "block_bytes": 1.32e9,           s_m, bytes of one block
              "cache_bytes_per_block": 8.5e6,  s_c, attention-cache bytes of
                                               one block for one session
              "block_cache_bytes": [2.4e6, ...]}, optional: s_c of each block
                                               (L entries, each <= s_c), less
                                               for sliding-window blocks
    "target_sessions": 10,     R, concurrent sessions to guarantee; or instead
    "arrival_rate": 0.5,       sessions per second and
    "session_time": 160,       seconds per session: R = round(mean + std) of
                               the Poisson arrivals in one session, capped by
                               (19) (the paper's rule, Sec. 3.3.1)
    "max_length": 128,         l_max, tokens generated per session (optional)
    "clients": ["c0", "c1"],
    "petals": {"cache_bytes_per_block": 234881024,   optional: PETALS' fixed
               "reserved_bytes": 2147483648},        cache budget and reserve
    "servers": [
      {"name": "a100-1",
       "memory_bytes": 8.0e10,           M_j, memory for blocks and caches
       "tau": 0.0032,                    tau_j, seconds per block per token
       "rtt": {"c0": 0.1, "c1": 0.005},  t_cj, per-token RTT to every client
       "max_blocks": 4,                  optional cap on hosted blocks
       "forward_rps": 300,               optional PETALS throughput (1/tau)
       "network_rps": 100,               optional PETALS network cap (none)
       "span": "0:4"}                    optional current span (swarm status --fleet)
    ]
  }
Byte counts may be written 1.32e9 but must be whole numbers.
`

// File is the JSON schema of a fleet file. Units are bytes and seconds;
// byte counts may be written 1.32e9 but must be whole numbers. Pointer
// fields are required (or, for the load, alternatives) and told apart from
// zero.
type File struct {
	Model struct {
		// Blocks is L, the number of transformer blocks (> 0).
		Blocks int `json:"blocks"`
		// BlockBytes is s_m, the bytes of one block's weights (required, > 0).
		BlockBytes *float64 `json:"block_bytes"`
		// CacheBytes is s_c, the attention-cache bytes of one block for one
		// session (required, > 0).
		CacheBytes *float64 `json:"cache_bytes_per_block"`
		// BlockCacheBytes is s_c of each block (optional; L entries, each
		// whole, > 0 and <= CacheBytes): less for sliding-window blocks,
		// which hold only their window (placement.Model.BlockCacheBytes).
		BlockCacheBytes []float64 `json:"block_cache_bytes"`
	} `json:"model"`
	// TargetSessions is R, the concurrent sessions to guarantee (>= 1);
	// give it or ArrivalRate and SessionTime, not both.
	TargetSessions *int `json:"target_sessions"`
	// ArrivalRate (sessions per second) and SessionTime (seconds per
	// session) choose R = round(mean + std) of the Poisson arrivals in one
	// session, capped by (19) (paper 003 Sec. 3.3.1); both or neither.
	ArrivalRate *float64 `json:"arrival_rate"`
	SessionTime *float64 `json:"session_time"`
	// MaxLength is l_max, the tokens generated per session (optional).
	MaxLength int `json:"max_length"`
	// Clients are the client names, each once; every server's RTT names
	// exactly these.
	Clients []string `json:"clients"`
	// Petals, optional, is PETALS' fixed cache budget per hosted block and
	// the memory it keeps aside, in bytes.
	Petals *struct {
		CacheBytesPerBlock float64 `json:"cache_bytes_per_block"`
		ReservedBytes      float64 `json:"reserved_bytes"`
	} `json:"petals"`
	// Servers are the servers, in the order plans list them.
	Servers []FileServer `json:"servers"`
}

// FileServer is one server of a fleet file.
type FileServer struct {
	// Name identifies the server (required, unique).
	Name string `json:"name"`
	// MemoryBytes is M_j, memory for blocks and caches (required, > 0).
	MemoryBytes *float64 `json:"memory_bytes"`
	// Tau is tau_j, seconds per block per token (required).
	Tau *float64 `json:"tau"`
	// RTT is t_cj, the per-token round trip time to every client in
	// seconds, by client name.
	RTT map[string]float64 `json:"rtt"`
	// MaxBlocks, optional, caps the blocks the server hosts.
	MaxBlocks int `json:"max_blocks,omitempty"`
	// ForwardRPS (1/tau) and NetworkRPS are PETALS' throughputs,
	// optional (0: none).
	ForwardRPS float64 `json:"forward_rps,omitempty"`
	NetworkRPS float64 `json:"network_rps,omitempty"`
	// Span, optional, is the span the server hosts now ("START:END",
	// 0-based half-open), as `swarm status --fleet` writes it for a live
	// swarm; plans ignore it, replanning starts from it (Fleet.Spans).
	Span string `json:"span,omitempty"`
}

// Fleet is a validated fleet file: the placement input without R, and how
// to choose R (ChooseSessions).
type Fleet struct {
	// Input is the placement snapshot; its Sessions is 1 until R is chosen.
	Input placement.Input
	// TargetSessions is target_sessions, 0 when the file gives none.
	TargetSessions int
	// ArrivalRate (sessions per second) and SessionTime (seconds) are the
	// load R is chosen from when TargetSessions is 0; 0 when absent.
	ArrivalRate, SessionTime float64
	// MaxLength is max_length, l_max in tokens; 0 when absent.
	MaxLength int
	// Spans are the servers' current spans (FileServer.Span), indexed like
	// Input.Servers, an empty span for a server without one; nil when no
	// server has one.
	Spans []swarm.Span
}

// Load reads and validates the fleet file at path. A file that breaks the
// schema gives an *Error (ErrBadFleet) naming the bad field; a file that
// cannot be read gives os.ReadFile's error.
func Load(path string) (Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Fleet{}, err
	}
	return Decode(path, bytes.NewReader(data))
}

// Decode reads and validates a fleet file from r; name labels its errors,
// which are *Error (ErrBadFleet). Unknown fields are errors.
func Decode(name string, r io.Reader) (Fleet, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var ff File
	if err := dec.Decode(&ff); err != nil {
		return Fleet{}, &Error{Path: name, Err: err}
	}
	fl, err := ff.Fleet()
	if err != nil {
		return Fleet{}, &Error{Path: name, Err: err}
	}
	return fl, nil
}

// Fleet validates ff and converts it; the error names the first bad field
// and what is wanted (placement.Input.Validate's errors included).
func (ff File) Fleet() (Fleet, error) {
	var fl Fleet
	in := &fl.Input
	in.Model.Blocks = ff.Model.Blocks
	if ff.Model.Blocks <= 0 {
		return fl, fmt.Errorf("model.blocks = %d, want the number of transformer blocks L > 0", ff.Model.Blocks)
	}
	var err error
	if in.Model.BlockBytes, err = wholeBytes("model.block_bytes", ff.Model.BlockBytes, true); err != nil {
		return fl, err
	}
	if in.Model.CacheBytes, err = wholeBytes("model.cache_bytes_per_block", ff.Model.CacheBytes, true); err != nil {
		return fl, err
	}
	for b, v := range ff.Model.BlockCacheBytes {
		c, err := wholeBytes(fmt.Sprintf("model.block_cache_bytes[%d]", b), &v, true)
		if err != nil {
			return fl, err
		}
		in.Model.BlockCacheBytes = append(in.Model.BlockCacheBytes, c)
	}
	if err := ff.load(&fl); err != nil {
		return fl, err
	}
	if ff.MaxLength < 0 {
		return fl, fmt.Errorf("max_length = %d, want >= 1 (or absent)", ff.MaxLength)
	}
	fl.MaxLength = ff.MaxLength
	index, err := clientIndex(ff.Clients)
	if err != nil {
		return fl, err
	}
	in.Clients = ff.Clients
	if ff.Petals != nil {
		b, r := ff.Petals.CacheBytesPerBlock, ff.Petals.ReservedBytes
		if in.Petals.CacheBytesPerBlock, err = wholeBytes("petals.cache_bytes_per_block", &b, false); err != nil {
			return fl, err
		}
		if in.Petals.ReservedBytes, err = wholeBytes("petals.reserved_bytes", &r, false); err != nil {
			return fl, err
		}
	}
	if in.Servers, err = ff.servers(index); err != nil {
		return fl, err
	}
	if fl.Spans, err = ff.spans(); err != nil {
		return fl, err
	}
	in.Sessions = 1 // checked with R = 1 here; the real R comes later
	if err := in.Validate(); err != nil {
		return fl, err
	}
	return fl, nil
}

// load checks target_sessions against arrival_rate and session_time.
func (ff File) load(fl *Fleet) error {
	switch {
	case ff.TargetSessions != nil && (ff.ArrivalRate != nil || ff.SessionTime != nil):
		return errors.New("give either target_sessions or arrival_rate and session_time, not both")
	case ff.TargetSessions != nil:
		if *ff.TargetSessions < 1 {
			return fmt.Errorf("target_sessions = %d, want >= 1", *ff.TargetSessions)
		}
		fl.TargetSessions = *ff.TargetSessions
	case ff.ArrivalRate != nil || ff.SessionTime != nil:
		if ff.ArrivalRate == nil || ff.SessionTime == nil {
			return errors.New("arrival_rate and session_time go together (sessions per second, seconds per session)")
		}
		if !(*ff.ArrivalRate >= 0) || !(*ff.SessionTime >= 0) || math.IsInf(*ff.ArrivalRate, 0) || math.IsInf(*ff.SessionTime, 0) {
			return fmt.Errorf("arrival_rate = %g, session_time = %g, want finite numbers >= 0", *ff.ArrivalRate, *ff.SessionTime)
		}
		fl.ArrivalRate, fl.SessionTime = *ff.ArrivalRate, *ff.SessionTime
	}
	return nil
}

// spans parses the servers' current spans (nil when none has one).
func (ff File) spans() ([]swarm.Span, error) {
	var out []swarm.Span
	for j, fs := range ff.Servers {
		if fs.Span == "" {
			continue
		}
		sp, err := swarm.ParseSpan(fs.Span)
		if err == nil {
			err = sp.Validate(ff.Model.Blocks)
		}
		if err != nil {
			return nil, fmt.Errorf("servers[%d] (%s).span = %q: %w", j, fs.Name, fs.Span, err)
		}
		if out == nil {
			out = make([]swarm.Span, len(ff.Servers))
		}
		out[j] = sp
	}
	return out, nil
}

// clientIndex maps each client name to its index.
func clientIndex(clients []string) (map[string]int, error) {
	if len(clients) == 0 {
		return nil, errors.New("clients is empty, want the client names, e.g. [\"c0\"]")
	}
	index := map[string]int{}
	for c, name := range clients {
		if name == "" {
			return nil, fmt.Errorf("clients[%d] is empty", c)
		}
		if _, dup := index[name]; dup {
			return nil, fmt.Errorf("clients[%d] = %q appears twice", c, name)
		}
		index[name] = c
	}
	return index, nil
}

// servers converts the servers, their RTTs indexed like the clients.
func (ff File) servers(index map[string]int) ([]placement.Server, error) {
	if len(ff.Servers) == 0 {
		return nil, errors.New("servers is empty")
	}
	var out []placement.Server
	names := map[string]bool{}
	for j, fs := range ff.Servers {
		field := fmt.Sprintf("servers[%d]", j)
		if fs.Name == "" {
			return nil, fmt.Errorf("%s.name is missing", field)
		}
		if names[fs.Name] {
			return nil, fmt.Errorf("%s.name = %q appears twice", field, fs.Name)
		}
		names[fs.Name] = true
		field = fmt.Sprintf("servers[%d] (%s)", j, fs.Name)
		s := placement.Server{Name: fs.Name, MaxBlocks: fs.MaxBlocks, ForwardRPS: fs.ForwardRPS, NetworkRPS: fs.NetworkRPS}
		var err error
		if s.MemoryBytes, err = wholeBytes(field+".memory_bytes", fs.MemoryBytes, true); err != nil {
			return nil, err
		}
		if fs.Tau == nil {
			return nil, fmt.Errorf("%s.tau is missing, want seconds per block per token", field)
		}
		s.Tau = *fs.Tau
		s.RTT = make([]float64, len(ff.Clients))
		for c, name := range ff.Clients {
			v, ok := fs.RTT[name]
			if !ok {
				return nil, fmt.Errorf("%s.rtt has no entry for client %q, want seconds per token for every client", field, name)
			}
			s.RTT[c] = v
		}
		for name := range fs.RTT {
			if _, ok := index[name]; !ok {
				return nil, fmt.Errorf("%s.rtt names client %q, which is not in clients", field, name)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// wholeBytes converts a JSON number of bytes (possibly written 1.32e9) to
// int64, requiring a whole non-negative number (positive if required).
func wholeBytes(field string, v *float64, required bool) (int64, error) {
	if v == nil {
		if required {
			return 0, fmt.Errorf("%s is missing, want a number of bytes", field)
		}
		return 0, nil
	}
	switch {
	case math.IsNaN(*v) || *v < 0 || *v > 1<<53:
		return 0, fmt.Errorf("%s = %g, want bytes in [0, 2^53]", field, *v)
	case *v != math.Trunc(*v):
		return 0, fmt.Errorf("%s = %g is not a whole number of bytes", field, *v)
	case required && *v == 0:
		return 0, fmt.Errorf("%s = 0, want > 0 bytes", field)
	}
	return int64(*v), nil
}
