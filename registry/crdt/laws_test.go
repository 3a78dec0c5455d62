package crdt

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/swarmllm/swarm/swarm"
)

// randEntry draws an entry from a small space so that equal keys, equal
// headers with different payloads, and exact duplicates all occur often.
// Signed is derived from every field, as the real signed encoding is.
func randEntry(r *rand.Rand) Entry {
	e := Entry{
		NodeID:      string(rune('a' + r.IntN(3))),
		Incarnation: uint64(1 + r.IntN(3)),
		State:       swarm.LifecycleState(1 + r.IntN(4)), // JOIN..LEFT
		Version:     uint64(1 + r.IntN(3)),
		HeartbeatMs: int64(r.IntN(2)),
		Info:        swarm.ServerInfo{Model: []string{"x", "y"}[r.IntN(2)]},
	}
	e.Session = fmt.Sprintf("s%d", e.Incarnation)
	e.Signed = []byte(fmt.Sprintf("%s|%d|%s|%d|%d|%d|%s", e.NodeID, e.Incarnation, e.Session, e.State, e.Version, e.HeartbeatMs, e.Info.Model))
	return e
}

// randSameKey draws an entry for node "a".
func randSameKey(r *rand.Rand) Entry {
	for {
		if e := randEntry(r); e.NodeID == "a" {
			return e
		}
	}
}

const lawTrials = 5000

// requireSame fails unless a and b are the same entry (Signed determines
// the entry, and Compare compares it last).
func requireSame(t *testing.T, a, b Entry, law string) {
	t.Helper()
	if Compare(a, b) != 0 || a.Info.Model != b.Info.Model {
		t.Fatalf("%s violated: %+v != %+v", law, a, b)
	}
}

func TestJoin_Commutative(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range lawTrials {
		a, b := randSameKey(r), randSameKey(r)
		requireSame(t, Join(a, b), Join(b, a), "commutativity")
	}
}

func TestJoin_Associative(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for range lawTrials {
		a, b, c := randSameKey(r), randSameKey(r), randSameKey(r)
		requireSame(t, Join(Join(a, b), c), Join(a, Join(b, c)), "associativity")
	}
}

func TestJoin_Idempotent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for range lawTrials {
		a := randSameKey(r)
		requireSame(t, a, Join(a, a), "idempotence")
	}
}

// TestJoin_MonotoneAndUpperBound checks that the join is an upper bound of
// both arguments and that it preserves the order: a <= b implies
// a ⊔ c <= b ⊔ c.
func TestJoin_MonotoneAndUpperBound(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for range lawTrials {
		a, b, c := randSameKey(r), randSameKey(r), randSameKey(r)
		j := Join(a, b)
		if Compare(j, a) < 0 || Compare(j, b) < 0 {
			t.Fatalf("join %+v is not an upper bound of %+v and %+v", j, a, b)
		}
		if Compare(a, b) <= 0 && Compare(Join(a, c), Join(b, c)) > 0 {
			t.Fatalf("join is not monotone: a=%+v b=%+v c=%+v", a, b, c)
		}
	}
}

// TestCompare_TotalOrder checks antisymmetry and transitivity of Compare.
func TestCompare_TotalOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for range lawTrials {
		a, b, c := randSameKey(r), randSameKey(r), randSameKey(r)
		if Compare(a, b) != -Compare(b, a) {
			t.Fatalf("Compare is not antisymmetric on %+v, %+v", a, b)
		}
		if Compare(a, b) == 0 && string(a.Signed) != string(b.Signed) {
			t.Fatalf("equal under Compare but different entries: %+v, %+v", a, b)
		}
		if Compare(a, b) <= 0 && Compare(b, c) <= 0 && Compare(a, c) > 0 {
			t.Fatalf("Compare is not transitive on %+v, %+v, %+v", a, b, c)
		}
	}
}

// TestCompare_HigherStateWinsWithinIncarnation pins the OpenTela rule:
// JOIN < SERVING < DOWN < LEFT, before the version.
func TestCompare_HigherStateWinsWithinIncarnation(t *testing.T) {
	states := []swarm.LifecycleState{swarm.StateJoin, swarm.StateServing, swarm.StateDown, swarm.StateLeft}
	for i := range states {
		for j := i + 1; j < len(states); j++ {
			lo := Entry{NodeID: "a", Incarnation: 1, State: states[i], Version: 100}
			hi := Entry{NodeID: "a", Incarnation: 1, State: states[j], Version: 1}
			require.Equal(t, hi, Join(lo, hi), "%v must beat %v", states[j], states[i])
		}
	}
	left := Entry{NodeID: "a", Incarnation: 1, State: swarm.StateLeft, Version: 9}
	rejoin := Entry{NodeID: "a", Incarnation: 2, State: swarm.StateJoin, Version: 1}
	require.Equal(t, rejoin, Join(left, rejoin), "a new incarnation re-joins after LEFT")
}

func randMap(r *rand.Rand) *Map {
	m := NewMap()
	for range r.IntN(6) {
		m.Merge(randEntry(r))
	}
	return m
}

func merged(maps ...*Map) *Map {
	out := NewMap()
	for _, m := range maps {
		out.MergeMap(m)
	}
	return out
}

func TestMapMerge_Laws(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for range lawTrials / 4 {
		a, b, c := randMap(r), randMap(r), randMap(r)
		require.True(t, merged(a, b).Equal(merged(b, a)), "commutative")
		require.True(t, merged(merged(a, b), c).Equal(merged(a, merged(b, c))), "associative")
		require.True(t, merged(a, a).Equal(a), "idempotent")
		ab := merged(a, b)
		for _, e := range a.Entries() {
			got, ok := ab.Get(e.NodeID)
			require.True(t, ok)
			require.GreaterOrEqual(t, Compare(got, e), 0, "monotone: merging never loses or lowers an entry")
		}
	}
}

// TestMapMerge_ConvergesUnderAnyDelivery delivers the same multiset of
// entries to two replicas in different orders, with duplicates, and checks
// they end equal.
func TestMapMerge_ConvergesUnderAnyDelivery(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 2000 {
		var es []Entry
		for range 1 + r.IntN(12) {
			es = append(es, randEntry(r))
		}
		x, y := NewMap(), NewMap()
		for _, e := range es {
			x.Merge(e)
		}
		for _, i := range r.Perm(len(es)) {
			y.Merge(es[i])
			if r.IntN(3) == 0 {
				y.Merge(es[i])
			}
		}
		require.True(t, x.Equal(y))
	}
}

func TestMap_NewerThan(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for range 2000 {
		a, b := randMap(r), randMap(r)
		// b merged with what a says is newer equals the full merge.
		got := b.Clone()
		for _, e := range a.NewerThan(b) {
			require.True(t, got.Merge(e), "NewerThan returned an entry that is not newer")
		}
		require.True(t, got.Equal(merged(a, b)))
	}
}
