package topologies

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// GraphMLOption configures LoadGraphML and ParseGraphML.
type GraphMLOption func(*graphmlConfig) error

type graphmlConfig struct {
	speed    float64 // propagation speed, m/s
	repetita bool    // use the Repetita converter's delay formula
}

// WithPropagationSpeed sets the signal speed, in metres per second, used to
// turn great-circle distances into delays. The default is FibreSpeed (2/3 c).
func WithPropagationSpeed(metresPerSecond float64) GraphMLOption {
	return func(c *graphmlConfig) error {
		if !(metresPerSecond > 0) || math.IsInf(metresPerSecond, 0) {
			return fmt.Errorf("%w: propagation speed %g m/s, want a finite value > 0", ErrBadTopology, metresPerSecond)
		}
		c.speed = metresPerSecond
		return nil
	}
}

// WithRepetitaDelays makes link delays follow the Repetita converter
// exactly instead of distance/speed: whole microseconds
// int(asin(sqrt(h))*1e6/(15 pi) + 5), i.e. distance over ~600,000 km/s + 5 us,
// and int(mean of the untruncated values) for links at nodes without
// coordinates. With it, a
// Zoo file reproduces the delays of its Repetita twin, which are the delays
// of paper 003 Table 3. Note that these are about 3x smaller than fibre
// propagation delays.
func WithRepetitaDelays() GraphMLOption {
	return func(c *graphmlConfig) error {
		c.repetita = true
		return nil
	}
}

// LoadGraphML reads an Internet Topology Zoo GraphML file; see ParseGraphML.
// The topology is named after the file's base name without extension
// ("Abvt"); the Zoo's long name ("AboveNet") is Topology.Network.
func LoadGraphML(path string, opts ...GraphMLOption) (*Topology, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("topologies: open graphml file: %w", err)
	}
	defer f.Close()
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	t, err := ParseGraphML(f, name, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// GraphML document structure (http://graphml.graphdrawing.org/specification.html).
type gmlData struct {
	Key   string `xml:"key,attr"`
	Value string `xml:",chardata"`
}

type gmlKey struct {
	ID   string `xml:"id,attr"`
	For  string `xml:"for,attr"`
	Name string `xml:"attr.name,attr"`
}

type gmlNode struct {
	ID   string    `xml:"id,attr"`
	Data []gmlData `xml:"data"`
}

type gmlEdge struct {
	Source string    `xml:"source,attr"`
	Target string    `xml:"target,attr"`
	Data   []gmlData `xml:"data"`
}

type gmlGraph struct {
	EdgeDefault string    `xml:"edgedefault,attr"`
	Data        []gmlData `xml:"data"`
	Nodes       []gmlNode `xml:"node"`
	Edges       []gmlEdge `xml:"edge"`
}

type gmlDoc struct {
	XMLName xml.Name   `xml:"graphml"`
	Keys    []gmlKey   `xml:"key"`
	Graphs  []gmlGraph `xml:"graph"`
}

// ParseGraphML reads a Topology Zoo GraphML document (encoding/xml). Data
// values are resolved by the key's attr.name, never by key id (ids differ
// from file to file). Node attributes used: label, Latitude, Longitude
// (decimal degrees; absent for some nodes). Edge attribute used:
// LinkSpeedRaw (bits/s) for the bandwidth, else 0 = unknown.
//
// The Zoo files carry no delays, so each link's delay is the great-circle
// distance of its endpoints over the propagation speed (default FibreSpeed,
// 2/3 c; see WithPropagationSpeed and WithRepetitaDelays). Links touching a
// node without coordinates get the mean of the computed delays, as the
// Repetita converter does, and are reported. An undirected graph
// (edgedefault="undirected", the Zoo's) gives two directed edges per
// <edge>; parallel <edge>s are kept and reported.
//
// Errors wrap ErrBadTopology.
func ParseGraphML(r io.Reader, name string, opts ...GraphMLOption) (*Topology, error) {
	cfg := graphmlConfig{speed: FibreSpeed}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	var doc gmlDoc
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: graphml: %w", ErrBadTopology, err)
	}
	if len(doc.Graphs) != 1 {
		return nil, fmt.Errorf("%w: graphml has %d <graph> elements, want 1", ErrBadTopology, len(doc.Graphs))
	}
	g := doc.Graphs[0]
	keyName := map[string]string{}
	for _, k := range doc.Keys {
		keyName[k.ID] = k.Name
	}
	attrs := func(data []gmlData) map[string]string {
		m := make(map[string]string, len(data))
		for _, d := range data {
			if n, ok := keyName[d.Key]; ok {
				m[n] = strings.TrimSpace(d.Value)
			}
		}
		return m
	}

	t := &Topology{Name: name, Network: attrs(g.Data)["Network"]}
	index := map[string]int{}
	for _, n := range g.Nodes {
		if _, dup := index[n.ID]; dup {
			return nil, fmt.Errorf("%w: graphml node id %q appears twice", ErrBadTopology, n.ID)
		}
		a := attrs(n.Data)
		node := Node{ID: n.ID, Label: a["label"]}
		latText, hasLat := a["Latitude"]
		lonText, hasLon := a["Longitude"]
		if hasLat && hasLon {
			lat, err1 := strconv.ParseFloat(latText, 64)
			lon, err2 := strconv.ParseFloat(lonText, 64)
			if err1 != nil || err2 != nil || math.Abs(lat) > 90 || math.Abs(lon) > 180 {
				return nil, fmt.Errorf("%w: graphml node %q: Latitude=%q Longitude=%q, want decimal degrees",
					ErrBadTopology, n.ID, latText, lonText)
			}
			node.Lat, node.Lon, node.HasCoords = lat, lon, true
		} else {
			t.Report.NodesWithoutCoords = append(t.Report.NodesWithoutCoords, n.ID)
			t.Report.warnf("node %s (%s) has no Latitude/Longitude; its links get the mean computed delay", n.ID, node.Label)
		}
		index[n.ID] = len(t.Nodes)
		t.Nodes = append(t.Nodes, node)
	}

	type link struct {
		u, v  int
		bw    float64
		delay float64 // seconds, NaN until known
		src   DelaySource
	}
	links := make([]link, 0, len(g.Edges))
	var sum float64 // seconds (fibre) or microseconds (Repetita)
	var located int
	for i, e := range g.Edges {
		u, ok1 := index[e.Source]
		v, ok2 := index[e.Target]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: graphml edge %d joins %q and %q, not both declared nodes", ErrBadTopology, i, e.Source, e.Target)
		}
		l := link{u: u, v: v, delay: math.NaN()}
		if raw, ok := attrs(e.Data)["LinkSpeedRaw"]; ok {
			bw, err := strconv.ParseFloat(raw, 64)
			if err != nil || bw < 0 {
				return nil, fmt.Errorf("%w: graphml edge %s-%s: LinkSpeedRaw %q, want bits/s", ErrBadTopology, e.Source, e.Target, raw)
			}
			l.bw = bw
		}
		nu, nv := t.Nodes[u], t.Nodes[v]
		if nu.HasCoords && nv.HasCoords {
			l.src = DelayFromCoordinates
			if cfg.repetita {
				us := repetitaLagMicros(nu.Lat, nu.Lon, nv.Lat, nv.Lon)
				l.delay = math.Trunc(us) * 1e-6
				sum += us
			} else {
				l.delay = GreatCircle(nu.Lat, nu.Lon, nv.Lat, nv.Lon) / cfg.speed
				sum += l.delay
			}
			located++
		}
		links = append(links, l)
	}
	var fill float64
	if located > 0 {
		if cfg.repetita {
			fill = math.Trunc(sum/float64(located)) * 1e-6
		} else {
			fill = sum / float64(located)
		}
	}
	filled := 0
	for i := range links {
		if math.IsNaN(links[i].delay) {
			links[i].delay, links[i].src = fill, DelayMeanFill
			filled++
		}
	}
	if filled > 0 {
		t.Report.warnf("%d links touch nodes without coordinates and got the mean computed delay %.6g s (%s)", filled, fill, cfg.describe())
	}

	undirected := g.EdgeDefault != "directed"
	for _, l := range links {
		t.Edges = append(t.Edges, Edge{From: l.u, To: l.v, Delay: l.delay, Bandwidth: l.bw, DelaySource: l.src})
		if undirected {
			t.Edges = append(t.Edges, Edge{From: l.v, To: l.u, Delay: l.delay, Bandwidth: l.bw, DelaySource: l.src})
		}
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	return t, nil
}

func (c graphmlConfig) describe() string {
	if c.repetita {
		return "Repetita converter formula, ~600,000 km/s + 5 us"
	}
	return fmt.Sprintf("great circle at %.0f km/s", c.speed/1000)
}
