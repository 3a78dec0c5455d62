package crdt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/swarmllm/swarm/swarm"
)

// scenarioTiming is the timing of testdata/*.txt (milliseconds).
var scenarioTiming = Timing{SuspectAfterMs: 3000, LeftAfterMs: 30000, RetentionMs: 60000, MaxClockSkewMs: 1000}

// TestScenarios runs the merge and liveness scripts in testdata (etcd-raft
// interaction-test style). Commands act on named replicas:
//
//	merge r=R id=ID inc=N state=S ver=N hb=MS   -> changed | unchanged
//	sync from=R to=R                             -> ids that changed in "to", or "no change"
//	equal a=R b=R                                -> equal | different
//	show r=R now=MS [heard=MS]                   -> one line per entry, with its liveness
//	gc r=R now=MS                                -> ids collected, or "none"
//
// The expected outputs were written by hand from the rules in doc.go.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		replicas := map[string]*Map{}
		get := func(name string) *Map {
			if replicas[name] == nil {
				replicas[name] = NewMap()
			}
			return replicas[name]
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var r string
			if d.HasArg("r") {
				d.ScanArgs(t, "r", &r)
			}
			switch d.Cmd {
			case "merge":
				var id, state string
				var inc, ver uint64
				var hb int64
				d.ScanArgs(t, "id", &id)
				d.ScanArgs(t, "inc", &inc)
				d.ScanArgs(t, "state", &state)
				d.ScanArgs(t, "ver", &ver)
				d.ScanArgs(t, "hb", &hb)
				var st swarm.LifecycleState
				if err := st.UnmarshalText([]byte(state)); err != nil {
					d.Fatalf(t, "%v", err)
				}
				e := Entry{NodeID: id, Incarnation: inc, Session: fmt.Sprintf("s%d", inc), State: st, Version: ver, HeartbeatMs: hb}
				e.Signed = []byte(fmt.Sprintf("%s|%d|%s|%d|%d", id, inc, st, ver, hb))
				if get(r).Merge(e) {
					return "changed"
				}
				return "unchanged"
			case "sync":
				var from, to string
				d.ScanArgs(t, "from", &from)
				d.ScanArgs(t, "to", &to)
				changed := get(to).MergeMap(get(from))
				if len(changed) == 0 {
					return "no change"
				}
				return strings.Join(changed, " ")
			case "equal":
				var a, b string
				d.ScanArgs(t, "a", &a)
				d.ScanArgs(t, "b", &b)
				if get(a).Equal(get(b)) {
					return "equal"
				}
				return "different"
			case "show":
				var now int64
				d.ScanArgs(t, "now", &now)
				var lines []string
				for _, e := range get(r).Entries() {
					heard := e.HeartbeatMs
					if d.HasArg("heard") {
						d.ScanArgs(t, "heard", &heard)
					}
					lines = append(lines, fmt.Sprintf("%s inc=%d %s v%d hb=%d -> %s",
						e.NodeID, e.Incarnation, e.State, e.Version, e.HeartbeatMs, Liveness(e, now, heard, scenarioTiming)))
				}
				if len(lines) == 0 {
					return "empty"
				}
				return strings.Join(lines, "\n")
			case "gc":
				var now int64
				d.ScanArgs(t, "now", &now)
				gone := GC(get(r), now, scenarioTiming)
				if len(gone) == 0 {
					return "none"
				}
				return strings.Join(gone, " ")
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}
