package fleet_test

import (
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/fleet"
	"github.com/swarmllm/swarm/placement"
	"github.com/swarmllm/swarm/swarm"
)

// goodFleet is a valid one-server fleet that each case of TestDecodeErrors
// breaks in one place.
const goodFleet = `{"model": {"blocks": 4, "block_bytes": 100, "cache_bytes_per_block": 10},
 "target_sessions": 2, "max_length": 16, "clients": ["c0", "c1"],
 "petals": {"cache_bytes_per_block": 20, "reserved_bytes": 0},
 "servers": [{"name": "a", "memory_bytes": 1000, "tau": 0.01, "rtt": {"c0": 0.1, "c1": 0.2}, "max_blocks": 4}]}`

func TestDecodeGoodFleet(t *testing.T) {
	fl, err := fleet.Decode("fleet.json", strings.NewReader(goodFleet))
	require.NoError(t, err)
	want := placement.Input{
		Model:    placement.Model{Blocks: 4, BlockBytes: 100, CacheBytes: 10},
		Clients:  []string{"c0", "c1"},
		Sessions: 1,
		Petals:   placement.PetalsParams{CacheBytesPerBlock: 20},
		Servers:  []placement.Server{{Name: "a", MemoryBytes: 1000, Tau: 0.01, RTT: []float64{0.1, 0.2}, MaxBlocks: 4}},
	}
	require.Equal(t, fleet.Fleet{Input: want, TargetSessions: 2, MaxLength: 16}, fl)

	sliding := strings.Replace(goodFleet, `"cache_bytes_per_block": 10}`, `"cache_bytes_per_block": 10, "block_cache_bytes": [4, 4, 4, 10]}`, 1)
	fl, err = fleet.Decode("fleet.json", strings.NewReader(sliding))
	require.NoError(t, err)
	require.Equal(t, []int64{4, 4, 4, 10}, fl.Input.Model.BlockCacheBytes)

	load := strings.Replace(goodFleet, `"target_sessions": 2`, `"arrival_rate": 0.5, "session_time": 1.32e2`, 1)
	fl, err = fleet.Decode("fleet.json", strings.NewReader(load))
	require.NoError(t, err)
	require.Zero(t, fl.TargetSessions)
	require.Equal(t, 0.5, fl.ArrivalRate)
	require.Equal(t, 132.0, fl.SessionTime)
}

// TestDecodeErrors breaks goodFleet once per validation rule: each error
// is an *Error matching ErrBadFleet that names the file and the field.
func TestDecodeErrors(t *testing.T) {
	server := `{"name": "a", "memory_bytes": 1000, "tau": 0.01, "rtt": {"c0": 0.1, "c1": 0.2}, "max_blocks": 4}`
	tests := []struct {
		name, old, new, want string
	}{
		{"not json", `{"model"`, `{model`, "invalid character"},
		{"unknown field", `"tau": 0.01`, `"tua": 0.01`, `unknown field "tua"`},
		{"blocks", `"blocks": 4`, `"blocks": 0`, "model.blocks = 0, want the number of transformer blocks L > 0"},
		{"missing block bytes", `"block_bytes": 100, `, ``, "model.block_bytes is missing, want a number of bytes"},
		{"fractional bytes", `"block_bytes": 100`, `"block_bytes": 100.5`, "model.block_bytes = 100.5 is not a whole number of bytes"},
		{"huge bytes", `"block_bytes": 100`, `"block_bytes": 1e17`, "model.block_bytes = 1e+17, want bytes in [0, 2^53]"},
		{"zero bytes", `"block_bytes": 100`, `"block_bytes": 0`, "model.block_bytes = 0, want > 0 bytes"},
		{"missing cache", `, "cache_bytes_per_block": 10`, ``, "model.cache_bytes_per_block is missing"},
		{"fractional block cache", `"cache_bytes_per_block": 10}`, `"cache_bytes_per_block": 10, "block_cache_bytes": [4, 10, 4.5, 10]}`, "model.block_cache_bytes[2] = 4.5 is not a whole number of bytes"},
		{"block cache count", `"cache_bytes_per_block": 10}`, `"cache_bytes_per_block": 10, "block_cache_bytes": [4, 10]}`, "model.block_cache_bytes has 2 entries, want one per block (4)"},
		{"block cache above s_c", `"cache_bytes_per_block": 10}`, `"cache_bytes_per_block": 10, "block_cache_bytes": [4, 11, 4, 10]}`, "model.block_cache_bytes[1] = 11, want 1..cache_bytes_per_block (10)"},
		{"both R sources", `"target_sessions": 2`, `"target_sessions": 2, "arrival_rate": 1, "session_time": 2`, "give either target_sessions or arrival_rate and session_time, not both"},
		{"target sessions", `"target_sessions": 2`, `"target_sessions": 0`, "target_sessions = 0, want >= 1"},
		{"half load", `"target_sessions": 2`, `"arrival_rate": 1`, "arrival_rate and session_time go together"},
		{"negative load", `"target_sessions": 2`, `"arrival_rate": -1, "session_time": 2`, "arrival_rate = -1, session_time = 2, want finite numbers >= 0"},
		{"max length", `"max_length": 16`, `"max_length": -1`, "max_length = -1, want >= 1 (or absent)"},
		{"no clients", `"clients": ["c0", "c1"]`, `"clients": []`, "clients is empty"},
		{"empty client", `"clients": ["c0", "c1"]`, `"clients": ["c0", ""]`, "clients[1] is empty"},
		{"duplicate client", `"clients": ["c0", "c1"]`, `"clients": ["c0", "c0"]`, `clients[1] = "c0" appears twice`},
		{"petals cache", `"cache_bytes_per_block": 20`, `"cache_bytes_per_block": 2.5`, "petals.cache_bytes_per_block = 2.5 is not a whole number of bytes"},
		{"petals reserve", `"reserved_bytes": 0`, `"reserved_bytes": -2`, "petals.reserved_bytes = -2, want bytes in [0, 2^53]"},
		{"no servers", server, ``, "servers is empty"},
		{"server name", `"name": "a", `, ``, "servers[0].name is missing"},
		{"duplicate server", server, server + ", " + server, `servers[1].name = "a" appears twice`},
		{"negative memory", `"memory_bytes": 1000`, `"memory_bytes": -1`, "servers[0] (a).memory_bytes = -1"},
		{"missing memory", `"memory_bytes": 1000, `, ``, "servers[0] (a).memory_bytes is missing"},
		{"missing tau", `"tau": 0.01, `, ``, "servers[0] (a).tau is missing, want seconds per block per token"},
		{"rtt missing client", `"c1": 0.2`, `"c2": 0.2`, `servers[0] (a).rtt has no entry for client "c1"`},
		{"rtt extra client", `"c1": 0.2`, `"c1": 0.2, "c9": 1`, `servers[0] (a).rtt names client "c9", which is not in clients`},
		{"negative rtt", `"c0": 0.1`, `"c0": -0.1`, "servers[0] (a).rtt[0] = -0.1"},
		{"bad span", `"max_blocks": 4`, `"max_blocks": 4, "span": "3-4"`, `servers[0] (a).span = "3-4"`},
		{"span past the model", `"max_blocks": 4`, `"max_blocks": 4, "span": "2:5"`, `servers[0] (a).span = "2:5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(goodFleet, tt.old, tt.new, 1)
			require.NotEqual(t, goodFleet, text, "the replacement must change the fleet")
			_, err := fleet.Decode("fleet.json", strings.NewReader(text))
			require.ErrorIs(t, err, fleet.ErrBadFleet)
			require.ErrorContains(t, err, tt.want)
			require.True(t, strings.HasPrefix(err.Error(), "bad fleet file: fleet.json: "), err.Error())
			var fe *fleet.Error
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "fleet.json", fe.Path)
		})
	}
}

// TestDecodeSpans: current spans are parsed per server, empty for one
// without; no span at all gives nil.
func TestDecodeSpans(t *testing.T) {
	two := strings.Replace(goodFleet, `"max_blocks": 4}]}`,
		`"max_blocks": 4, "span": "1:3"}, {"name": "b", "memory_bytes": 1000, "tau": 0.01, "rtt": {"c0": 0.1, "c1": 0.2}}]}`, 1)
	fl, err := fleet.Decode("fleet.json", strings.NewReader(two))
	require.NoError(t, err)
	require.Equal(t, []swarm.Span{{Start: 1, End: 3}, {}}, fl.Spans)
	fl, err = fleet.Decode("fleet.json", strings.NewReader(goodFleet))
	require.NoError(t, err)
	require.Nil(t, fl.Spans)
}

func TestLoad(t *testing.T) {
	fl, err := fleet.Load(filepath.Join("testdata", "fig5.json"))
	require.NoError(t, err)
	require.Equal(t, 2, fl.Input.Model.Blocks)
	require.Len(t, fl.Input.Servers, 4)

	_, err = fleet.Load(filepath.Join("testdata", "missing.json"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NotErrorIs(t, err, fleet.ErrBadFleet, "an unreadable file is not a bad one")

	_, err = fleet.Load(filepath.Join("testdata", "plan.txt"))
	require.ErrorIs(t, err, fleet.ErrBadFleet)
	require.ErrorContains(t, err, "bad fleet file: testdata/plan.txt: invalid character")
}

// TestSchemaNamesEveryField: the help text shows every JSON field of File.
func TestSchemaNamesEveryField(t *testing.T) {
	var tags []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct {
			return
		}
		for f := range ty.Fields() {
			tags = append(tags, strings.Split(f.Tag.Get("json"), ",")[0])
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[fleet.File]())
	require.Len(t, tags, 22)
	for _, tag := range tags {
		require.Contains(t, fleet.Schema, `"`+tag+`"`)
	}
}
