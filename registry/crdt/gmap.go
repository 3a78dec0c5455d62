package crdt

import (
	"maps"
	"slices"
	"strings"
)

// Map is the G-Map: node id -> the largest entry seen for that node. The
// zero value is not usable; call NewMap. A Map is not safe for concurrent
// use: its owner serialises access.
type Map struct {
	entries map[string]Entry
}

// NewMap returns an empty map.
func NewMap() *Map { return &Map{entries: map[string]Entry{}} }

// Len returns the number of entries.
func (m *Map) Len() int { return len(m.entries) }

// Get returns the entry of a node.
func (m *Map) Get(nodeID string) (Entry, bool) {
	e, ok := m.entries[nodeID]
	return e, ok
}

// Merge joins e into the map and reports whether the map changed (e was
// larger than the entry held for its node, or the node was unknown).
func (m *Map) Merge(e Entry) bool {
	old, ok := m.entries[e.NodeID]
	if ok && Compare(old, e) >= 0 {
		return false
	}
	m.entries[e.NodeID] = e
	return true
}

// MergeMap joins every entry of o into m and returns the ids that changed,
// sorted.
func (m *Map) MergeMap(o *Map) []string {
	var changed []string
	for _, e := range o.entries {
		if m.Merge(e) {
			changed = append(changed, e.NodeID)
		}
	}
	slices.Sort(changed)
	return changed
}

// Remove drops a node's entry (garbage collection; see Collectable).
func (m *Map) Remove(nodeID string) { delete(m.entries, nodeID) }

// Entries returns the entries sorted by node id.
func (m *Map) Entries() []Entry {
	out := slices.Collect(maps.Values(m.entries))
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.NodeID, b.NodeID) })
	return out
}

// NewerThan returns the entries of m that other lacks or holds a smaller
// value for, sorted by node id: what an anti-entropy reply must carry.
func (m *Map) NewerThan(other *Map) []Entry {
	var out []Entry
	for id, e := range m.entries {
		if o, ok := other.entries[id]; ok && Compare(o, e) >= 0 {
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.NodeID, b.NodeID) })
	return out
}

// Clone returns an independent copy of the map (entries share their
// immutable Signed and Info slices).
func (m *Map) Clone() *Map { return &Map{entries: maps.Clone(m.entries)} }

// Equal reports whether two maps hold the same entries.
func (m *Map) Equal(o *Map) bool {
	if len(m.entries) != len(o.entries) {
		return false
	}
	for id, e := range m.entries {
		f, ok := o.entries[id]
		if !ok || Compare(e, f) != 0 {
			return false
		}
	}
	return true
}
