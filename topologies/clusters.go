package topologies

import (
	"fmt"
	"math"
)

// Clusters is a clustered deployment: every pair of nodes in the same
// cluster sees IntraRTT and IntraBandwidth, every pair in different clusters
// InterRTT and InterBandwidth (paper 003, Table 2).
type Clusters struct {
	// Names of the clusters, in index order.
	Names []string `json:"names"`
	// Hosts describes what each cluster holds (for tables and --help); same
	// length as Names.
	Hosts []string `json:"hosts"`
	// IntraRTT and InterRTT are round-trip times in seconds.
	IntraRTT float64 `json:"intra_rtt"`
	InterRTT float64 `json:"inter_rtt"`
	// IntraBandwidth and InterBandwidth are in bits per second.
	IntraBandwidth float64 `json:"intra_bandwidth"`
	InterBandwidth float64 `json:"inter_bandwidth"`
}

// PaperClusters returns the configuration of paper 003 Table 2: Cluster0
// holds remote clients (CPU only), Cluster1 two A100 servers, Cluster2 seven
// MIG servers; 5 ms and 1 Gbit/s inside a cluster, 100 ms and 100 Mbit/s
// across clusters.
func PaperClusters() Clusters {
	return Clusters{
		Names:          []string{"Cluster0", "Cluster1", "Cluster2"},
		Hosts:          []string{"clients (CPU)", "2 A100s", "7 MIGs"},
		IntraRTT:       5e-3,
		InterRTT:       100e-3,
		IntraBandwidth: 1e9,
		InterBandwidth: 100e6,
	}
}

// Validate checks the configuration and returns an error wrapping
// ErrBadTopology naming the first bad field.
func (c Clusters) Validate() error {
	switch {
	case len(c.Names) == 0:
		return fmt.Errorf("%w: clusters: no cluster names", ErrBadTopology)
	case len(c.Hosts) != 0 && len(c.Hosts) != len(c.Names):
		return fmt.Errorf("%w: clusters: %d host descriptions for %d clusters", ErrBadTopology, len(c.Hosts), len(c.Names))
	}
	for _, v := range []struct {
		name string
		x    float64
	}{{"intra RTT", c.IntraRTT}, {"inter RTT", c.InterRTT}, {"intra bandwidth", c.IntraBandwidth}, {"inter bandwidth", c.InterBandwidth}} {
		if math.IsNaN(v.x) || math.IsInf(v.x, 0) || v.x < 0 {
			return fmt.Errorf("%w: clusters: %s = %g, want a finite value >= 0", ErrBadTopology, v.name, v.x)
		}
	}
	return nil
}

// RTT returns the round-trip time in seconds between a node of cluster a and
// a node of cluster b. It panics if a or b is not a cluster index.
func (c Clusters) RTT(a, b int) float64 {
	c.check(a, b)
	if a == b {
		return c.IntraRTT
	}
	return c.InterRTT
}

// Bandwidth returns the bandwidth in bits per second between a node of
// cluster a and a node of cluster b. It panics if a or b is not a cluster
// index.
func (c Clusters) Bandwidth(a, b int) float64 {
	c.check(a, b)
	if a == b {
		return c.IntraBandwidth
	}
	return c.InterBandwidth
}

func (c Clusters) check(a, b int) {
	if a < 0 || a >= len(c.Names) || b < 0 || b >= len(c.Names) {
		panic(fmt.Sprintf("topologies: cluster index (%d, %d) out of range [0, %d)", a, b, len(c.Names)))
	}
}
