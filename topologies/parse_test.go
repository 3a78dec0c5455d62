package topologies

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// triangle: a-b 1000 us, b-c 2000 us, a-c 5000 us (longer than via b).
const triangle = `NODES 3
label x y
0_A 1.0 2.0
1_B 3.0 4.0
2_C 0.0 0.0

EDGES 6
label src dest weight bw delay
edge_0 0 1 1 1000000 1000
edge_1 1 0 1 1000000 1000
edge_2 1 2 1 1000000 2000
edge_3 2 1 1 1000000 2000
edge_4 0 2 1 100000 5000
edge_5 2 0 1 100000 5000
`

func TestRepetitaTriangle(t *testing.T) {
	top, err := ParseRepetita(strings.NewReader(triangle), "tri")
	require.NoError(t, err)
	require.Equal(t, []Node{
		{ID: "0", Label: "A", Lat: 2, Lon: 1, HasCoords: true},
		{ID: "1", Label: "B", Lat: 4, Lon: 3, HasCoords: true},
		{ID: "2", Label: "C", HasCoords: false},
	}, top.Nodes)
	require.Len(t, top.Edges, 6)
	require.Equal(t, Edge{From: 0, To: 2, Delay: 5e-3, Bandwidth: 1e8, DelaySource: DelayFromFile}, top.Edges[4])
	require.Equal(t, []string{"2"}, top.Report.NodesWithoutCoords)
	require.Len(t, top.Report.Warnings, 1)

	m, err := top.RTT()
	require.NoError(t, err)
	// a->c shortest is a-b-c = 3000 us one way; RTT = 2 x 3 ms.
	require.InDelta(t, 6e-3, m.At(0, 2), 1e-15)
	require.InDelta(t, 2e-3, m.At(0, 1), 1e-15)
	require.InDelta(t, 4e-3, m.At(1, 2), 1e-15)
	lo, hi := m.Range()
	require.InDelta(t, 2e-3, lo, 1e-15)
	require.InDelta(t, 6e-3, hi, 1e-15)
}

func TestRepetitaReportsDuplicatesOneWayAndComponents(t *testing.T) {
	in := `NODES 4
label x y
0_A 1 1
1_B 2 2
2_C 3 3
3_D 4 4
EDGES 5
label src dest weight bw delay
edge_0 0 1 1 1 100
edge_1 1 0 1 1 100
edge_2 0 1 1 1 300
edge_3 2 2 1 1 7
edge_4 2 3 1 1 50
`
	top, err := ParseRepetita(strings.NewReader(in), "x")
	require.NoError(t, err)
	require.Equal(t, 1, top.Report.ParallelEdges)
	require.Equal(t, 1, top.Report.SelfLoops)
	// 0->1 at 300 us has no 1->0 at 300 us; 2->3 has no reverse at all.
	require.Equal(t, 2, top.Report.OneWayEdges)
	require.Equal(t, 2, top.Report.Components)
	require.Len(t, top.Report.Warnings, 5)

	m, err := top.RTT()
	require.NoError(t, err)
	require.InDelta(t, 200e-6, m.At(0, 1), 1e-15, "the parallel edge with the smaller delay wins")
	require.True(t, math.IsInf(m.At(0, 2), 1), "no path between components")
	require.True(t, math.IsInf(m.At(2, 3), 1), "no path back from D to C")
}

func TestParseRepetitaErrors(t *testing.T) {
	good := strings.Split(triangle, "\n")
	edit := func(line int, text string) string {
		l := append([]string(nil), good...)
		l[line] = text
		return strings.Join(l, "\n")
	}
	for _, tt := range []struct {
		name, in, want string
	}{
		{"empty", "", "want \"NODES\""},
		{"bad keyword", edit(0, "VERTICES 3"), "want \"NODES\""},
		{"bad count", edit(0, "NODES three"), "not a non-negative integer"},
		{"bad header", edit(1, "name x y"), "column header"},
		{"short node line", edit(2, "0_A 1.0"), "want 3 (label x y)"},
		{"bad coordinate", edit(3, "1_B east 4.0"), "want decimal degrees"},
		{"too few nodes", strings.Replace(triangle, "NODES 3", "NODES 4", 1), "line 7: node line has 2 fields"},
		{"edge to unknown node", edit(8, "edge_0 0 9 1 1000000 1000"), "want node indices in [0, 3)"},
		{"negative delay", edit(8, "edge_0 0 1 1 1000000 -5"), "want non-negative numbers"},
		{"bad weight", edit(8, "edge_0 0 1 w 1000000 5"), "weight \"w\""},
		{"truncated edges", strings.Replace(triangle, "EDGES 6", "EDGES 7", 1), "file ends after 6 of 7 edges"},
		{"trailing garbage", triangle + "edge_6 0 1 1 1 1\n", "unexpected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRepetita(strings.NewReader(tt.in), "bad")
			require.ErrorIs(t, err, ErrBadTopology)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

const smallGraphML = `<?xml version="1.0" encoding="utf-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key attr.name="Network" attr.type="string" for="graph" id="g0" />
  <key attr.name="label" attr.type="string" for="node" id="x1" />
  <key attr.name="Latitude" attr.type="double" for="node" id="x2" />
  <key attr.name="Longitude" attr.type="double" for="node" id="x3" />
  <key attr.name="LinkSpeedRaw" attr.type="double" for="edge" id="x4" />
  <graph edgedefault="undirected">
    <data key="g0">Tiny</data>
    <node id="a"><data key="x1">A</data><data key="x2">0</data><data key="x3">0</data></node>
    <node id="b"><data key="x1">B</data><data key="x2">0</data><data key="x3">1</data></node>
    <node id="c"><data key="x1">C</data></node>
    <edge source="a" target="b"><data key="x4">2500000000.0</data></edge>
    <edge source="b" target="c" />
    <edge source="a" target="b" />
  </graph>
</graphml>`

func TestGraphMLSmall(t *testing.T) {
	top, err := ParseGraphML(strings.NewReader(smallGraphML), "tiny")
	require.NoError(t, err)
	require.Equal(t, "Tiny", top.Network)
	require.Len(t, top.Nodes, 3)
	require.Len(t, top.Edges, 6)
	oneDegree := math.Pi / 180 * EarthRadius / FibreSpeed // seconds
	require.InDelta(t, oneDegree, top.Edges[0].Delay, 1e-12)
	require.Equal(t, 2.5e9, top.Edges[0].Bandwidth)
	require.Equal(t, DelayFromCoordinates, top.Edges[0].DelaySource)
	require.Equal(t, Edge{From: 2, To: 1, Delay: top.Edges[0].Delay, DelaySource: DelayMeanFill}, top.Edges[3],
		"b-c touches c without coordinates: mean of the computed delays (both a-b links)")
	require.Equal(t, []string{"c"}, top.Report.NodesWithoutCoords)
	require.Equal(t, 2, top.Report.ParallelEdges)

	slow, err := ParseGraphML(strings.NewReader(smallGraphML), "tiny", WithPropagationSpeed(FibreSpeed/2))
	require.NoError(t, err)
	require.InDelta(t, 2*oneDegree, slow.Edges[0].Delay, 1e-12)
}

func TestParseGraphMLErrors(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
		opts           []GraphMLOption
	}{
		{"not xml", "<graphml><graph>", "graphml", nil},
		{"no graph", `<graphml xmlns="http://graphml.graphdrawing.org/xmlns"></graphml>`, "want 1", nil},
		{"edge to unknown node", strings.Replace(smallGraphML, `target="c"`, `target="zz"`, 1), "not both declared nodes", nil},
		{"duplicate node id", strings.Replace(smallGraphML, `<node id="b">`, `<node id="a">`, 1), "appears twice", nil},
		{"bad latitude", strings.Replace(smallGraphML, `<data key="x2">0</data><data key="x3">1</data>`, `<data key="x2">95</data><data key="x3">1</data>`, 1), "want decimal degrees", nil},
		{"bad link speed", strings.Replace(smallGraphML, "2500000000.0", "fast", 1), "LinkSpeedRaw", nil},
		{"bad speed option", smallGraphML, "propagation speed", []GraphMLOption{WithPropagationSpeed(0)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseGraphML(strings.NewReader(tt.in), "bad", tt.opts...)
			require.ErrorIs(t, err, ErrBadTopology)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestRTTRejectsBadDelay(t *testing.T) {
	top := &Topology{Name: "x", Nodes: []Node{{ID: "a"}, {ID: "b"}}, Edges: []Edge{{From: 0, To: 1, Delay: -1}}}
	_, err := top.RTT()
	require.ErrorIs(t, err, ErrBadTopology)
}

func TestPaperClusters(t *testing.T) {
	c := PaperClusters()
	require.NoError(t, c.Validate())
	// Table 2 of paper 003.
	for _, tt := range []struct {
		a, b    int
		rtt, bw float64
	}{
		{0, 0, 0.005, 1e9}, {1, 1, 0.005, 1e9}, {2, 2, 0.005, 1e9},
		{0, 1, 0.100, 100e6}, {1, 0, 0.100, 100e6}, {0, 2, 0.100, 100e6}, {1, 2, 0.100, 100e6},
	} {
		require.Equal(t, tt.rtt, c.RTT(tt.a, tt.b))
		require.Equal(t, tt.bw, c.Bandwidth(tt.a, tt.b))
	}
	require.Panics(t, func() { c.RTT(0, 3) })
	bad := c
	bad.InterRTT = math.NaN()
	require.ErrorIs(t, bad.Validate(), ErrBadTopology)
	bad = c
	bad.Hosts = []string{"x"}
	require.ErrorIs(t, bad.Validate(), ErrBadTopology)
}
