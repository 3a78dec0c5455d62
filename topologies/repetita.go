package topologies

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LoadRepetita reads a Repetita ".graph" file; see ParseRepetita. The
// topology is named after the file's base name without extension.
func LoadRepetita(path string) (*Topology, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("topologies: open repetita file: %w", err)
	}
	defer f.Close()
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	t, err := ParseRepetita(f, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseRepetita reads the Repetita text format (the format of
// github.com/svissicchio/Repetita, "data/*/<Name>.graph"):
//
//	NODES <n>
//	label x y
//	<zooId>_<label> <lon> <lat>          n lines, node index = line order
//	(blank line)
//	EDGES <m>
//	label src dest weight bw delay
//	edge_<k> <src> <dest> <weight> <bw> <delay>     m lines
//
// with bw in kbit/s and delay in microseconds (Repetita Topology.java:
// "capacity of an edge, typically in Kbps", "latency of an edge, typically
// in microseconds"). Edges are directed; Repetita writes every link as two
// edges u->v and v->u, and both are kept. A position of exactly "0.0 0.0"
// is Repetita's placeholder for "unknown" and is reported as a node
// without coordinates.
//
// Errors wrap ErrBadTopology and name the line.
func ParseRepetita(r io.Reader, name string) (*Topology, error) {
	p := &repetitaParser{sc: bufio.NewScanner(r), t: &Topology{Name: name}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	if err := p.t.validate(); err != nil {
		return nil, err
	}
	return p.t, nil
}

type repetitaParser struct {
	sc   *bufio.Scanner
	line int
	t    *Topology
}

func (p *repetitaParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: repetita line %d: %s", ErrBadTopology, p.line, fmt.Sprintf(format, args...))
}

// next returns the fields of the next non-blank line, or nil at the end.
func (p *repetitaParser) next() ([]string, error) {
	for p.sc.Scan() {
		p.line++
		if f := strings.Fields(p.sc.Text()); len(f) > 0 {
			return f, nil
		}
	}
	if err := p.sc.Err(); err != nil {
		return nil, fmt.Errorf("topologies: read repetita: %w", err)
	}
	return nil, nil
}

// section reads "<KEYWORD> <count>" and the column header line after it.
func (p *repetitaParser) section(keyword string, header []string) (int, error) {
	f, err := p.next()
	if err != nil {
		return 0, err
	}
	if len(f) != 2 || f[0] != keyword {
		return 0, p.errorf("got %q, want %q followed by a count", strings.Join(f, " "), keyword)
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 {
		return 0, p.errorf("%s count %q is not a non-negative integer", keyword, f[1])
	}
	h, err := p.next()
	if err != nil {
		return 0, err
	}
	if strings.Join(h, " ") != strings.Join(header, " ") {
		return 0, p.errorf("got column header %q, want %q", strings.Join(h, " "), strings.Join(header, " "))
	}
	return n, nil
}

func (p *repetitaParser) parse() error {
	n, err := p.section("NODES", []string{"label", "x", "y"})
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		f, err := p.next()
		if err != nil {
			return err
		}
		if f == nil {
			return p.errorf("file ends after %d of %d nodes", i, n)
		}
		if len(f) != 3 {
			return p.errorf("node line has %d fields, want 3 (label x y)", len(f))
		}
		lon, err1 := strconv.ParseFloat(f[1], 64)
		lat, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil {
			return p.errorf("node %q: x=%q y=%q, want decimal degrees", f[0], f[1], f[2])
		}
		id, label, _ := strings.Cut(f[0], "_")
		node := Node{ID: id, Label: strings.ReplaceAll(label, "_", " "), Lat: lat, Lon: lon, HasCoords: !(lat == 0 && lon == 0)}
		if !node.HasCoords {
			p.t.Report.NodesWithoutCoords = append(p.t.Report.NodesWithoutCoords, id)
			p.t.Report.warnf("node %s (%s) has position 0.0 0.0, Repetita's placeholder for unknown; its edges keep the file's delays", f[0], node.Label)
		}
		p.t.Nodes = append(p.t.Nodes, node)
	}
	m, err := p.section("EDGES", []string{"label", "src", "dest", "weight", "bw", "delay"})
	if err != nil {
		return err
	}
	for i := 0; i < m; i++ {
		f, err := p.next()
		if err != nil {
			return err
		}
		if f == nil {
			return p.errorf("file ends after %d of %d edges", i, m)
		}
		if len(f) != 6 {
			return p.errorf("edge line has %d fields, want 6 (label src dest weight bw delay)", len(f))
		}
		src, err1 := strconv.Atoi(f[1])
		dst, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || src < 0 || dst < 0 || src >= n || dst >= n {
			return p.errorf("edge %s: src=%q dest=%q, want node indices in [0, %d)", f[0], f[1], f[2], n)
		}
		if _, err := strconv.ParseFloat(f[3], 64); err != nil {
			return p.errorf("edge %s: weight %q is not a number", f[0], f[3])
		}
		bw, err1 := strconv.ParseFloat(f[4], 64)
		delay, err2 := strconv.ParseFloat(f[5], 64)
		if err1 != nil || err2 != nil || bw < 0 || delay < 0 {
			return p.errorf("edge %s: bw=%q delay=%q, want non-negative numbers (kbit/s, microseconds)", f[0], f[4], f[5])
		}
		p.t.Edges = append(p.t.Edges, Edge{
			From: src, To: dst,
			Delay:       delay * 1e-6,
			Bandwidth:   bw * 1e3,
			DelaySource: DelayFromFile,
		})
	}
	if f, err := p.next(); err != nil {
		return err
	} else if f != nil {
		return p.errorf("unexpected %q after the %d edges", strings.Join(f, " "), m)
	}
	return nil
}
