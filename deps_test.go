package swarm_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/swarmllm/swarm"

// depRule is what one package may import, as its package doc states it
// (STYLE.md pattern 10: guard rails as tests). Repository packages are
// named relative to the module ("" is the module root, "swarm/wire" ...);
// a name also covers its subpackages. There are no exceptions: a package
// that two parties share (api/, the session protocol) is a package of its
// own that both may import.
type depRule struct {
	// only, when non-nil, lists the only repository packages the package
	// may import directly (exact names); an empty non-nil list allows none.
	only []string
	// never lists repository packages (with their subpackages) it must not
	// import directly.
	never []string
	// std lists packages outside the repository it must not import
	// directly ("net" also bans "net/http").
	std []string
	// transitive lists import-path substrings that must not appear anywhere
	// in its dependency graph ("libp2p", "net/http").
	transitive []string
	// required lists repository packages it must import directly.
	required []string
	// testOnly marks a package that exists for tests (registrytest,
	// servertest, testenv, ...): only other such packages and tests may
	// import it.
	testOnly bool
}

var (
	pure       = []string{"net", "os", "time", "sync"}
	noNetwork  = []string{"libp2p", "net/http"}
	vocabulary = []string{"swarm"}
)

// depRules holds every package of the module: a new package must say here
// what it must never import.
var depRules = map[string]depRule{
	"":                      {},
	"cmd/swarm":             {},
	"dashboard":             {only: []string{}},
	"swarm":                 {only: []string{}, std: []string{"net", "os", "time"}},
	"swarm/wire":            {only: vocabulary, std: []string{"net", "os", "time"}},
	"swarm/p2p":             {never: []string{"registry", "server", "client", "placement", "routing", "blocks", "cmd"}},
	"placement":             {only: vocabulary, std: pure, transitive: noNetwork},
	"routing":               {only: vocabulary, std: pure, transitive: noNetwork},
	"api":                   {only: []string{"swarm", "swarm/wire"}},
	"topologies":            {only: []string{}, std: []string{"net", "time", "sync"}},
	"fleet":                 {never: []string{"server", "client", "registry", "node", "ingress", "blocks", "cmd"}, std: []string{"net"}, transitive: noNetwork},
	"sim":                   {only: []string{"placement", "routing", "swarm", "topologies"}, std: []string{"net", "os", "sync"}, transitive: noNetwork, required: []string{"placement", "routing"}},
	"sim/experiment":        {only: []string{"sim", "topologies"}, std: []string{"net"}, transitive: noNetwork},
	"blocks":                {never: []string{"server", "client", "registry", "sim", "placement", "routing", "node", "ingress", "cmd"}, std: []string{"net"}},
	"blocks/cuda":           {only: []string{"blocks", "swarm"}, std: []string{"net"}},
	"blocks/tokenizer":      {only: vocabulary, std: []string{"net"}},
	"blocks/synth":          {only: []string{"swarm", "blocks/tokenizer"}, std: []string{"net"}},
	"blocks/parity":         {only: []string{"blocks", "blocks/synth", "swarm"}, std: []string{"net"}},
	"hub":                   {only: []string{}},
	"hub/modelsrc":          {only: []string{"hub", "blocks"}},
	"hub/hubtest":           {only: []string{}, testOnly: true},
	"registry":              {never: []string{"server", "client", "placement", "routing", "blocks", "cmd"}},
	"registry/crdt":         {only: vocabulary, std: append(slices.Clone(pure), "math/rand", "math/rand/v2"), transitive: noNetwork},
	"registry/memtransport": {only: []string{"registry", "registry/crdt", "swarm"}, std: []string{"github.com/libp2p"}},
	"registry/registrytest": {never: []string{"server", "client", "node", "cmd"}, testOnly: true},
	"registry/convergence":  {never: []string{"server", "client", "placement", "routing", "blocks", "cmd"}},
	"server":                {never: []string{"client", "registry", "placement", "sim", "cmd"}},
	"server/admission":      {only: []string{"swarm", "api"}, std: []string{"net"}},
	"server/fullrange":      {never: []string{"client", "ingress", "registry", "cmd"}},
	"server/servertest":     {never: []string{"client", "registry", "node", "ingress", "sim", "placement", "routing", "cmd"}, testOnly: true},
	"server/serverbench":    {never: []string{"client", "registry", "placement", "sim", "cmd"}},
	"client":                {never: []string{"server", "registry", "sim", "cmd"}},
	"client/chat":           {only: []string{"client"}, required: []string{"client"}},
	"client/local":          {never: []string{"server", "registry", "node", "sim", "cmd"}, std: []string{"net"}},
	"node":                  {never: []string{"cmd", "sim"}},
	"planner":               {never: []string{"server", "client", "node", "ingress", "sim", "blocks", "routing", "cmd"}},
	"ingress":               {never: []string{"server", "registry", "node", "sim", "cmd", "ingress/openai", "ingress/petals", "ingress/ingresstest"}},
	"ingress/openai":        {never: []string{"server", "registry", "node", "sim", "cmd"}},
	"ingress/petals":        {never: []string{"server", "registry", "node", "sim", "cmd"}},
	"ingress/loadtest":      {never: []string{"ingress", "server", "registry", "node", "sim", "cmd"}},
	"ingress/ingresstest":   {never: []string{"cmd"}, testOnly: true},
	"internal/testenv":      {only: []string{}, testOnly: true},
	"internal/supervise":    {only: []string{}},
	"internal/membw":        {only: []string{}},
	"internal/flops":        {only: []string{}},
	"internal/llamabench":   {only: []string{}},
	"internal/enginebench":  {never: []string{"server", "registry", "node", "sim", "ingress", "cmd"}},
	"internal/cliconf":      {only: []string{}},
	"internal/launch":       {only: []string{"internal/supervise"}},
	"internal/churn":        {never: []string{"server", "client", "sim", "cmd", "ingress/openai", "ingress/petals"}, required: []string{"internal/launch", "ingress/loadtest"}},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// TestDependencyRules checks every package's direct and transitive imports
// against depRules, from one `go list -json ./...`.
func TestDependencyRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go list: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)

	seen := map[string]bool{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		rule, ok := depRules[name]
		require.Truef(t, ok, "package %q has no entry in depRules: say what it must never import", name)
		seen[name] = true
		checkDeps(t, name, rule, p)
	}
	for name := range depRules {
		require.Truef(t, seen[name], "depRules names %q, which is not a package of the module", name)
	}
}

func checkDeps(t *testing.T, name string, rule depRule, p listedPackage) {
	t.Helper()
	within := func(path, pkg string) bool { return path == pkg || strings.HasPrefix(path, pkg+"/") }
	for _, imp := range p.Imports {
		if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
			require.Falsef(t, depRules[rel].testOnly && !rule.testOnly, "%s imports %s, which only tests may import", name, rel)
			if rule.only != nil {
				require.Containsf(t, rule.only, rel, "%s imports %s; it may import only %v from this repository", name, rel, rule.only)
			}
			for _, banned := range rule.never {
				require.Falsef(t, within(rel, banned), "%s imports %s; its package doc forbids %s", name, rel, banned)
			}
			continue
		}
		for _, banned := range rule.std {
			require.Falsef(t, within(imp, banned), "%s imports %s directly; its package doc forbids %s", name, imp, banned)
		}
	}
	for _, dep := range p.Deps {
		for _, banned := range rule.transitive {
			require.Falsef(t, strings.Contains(dep, banned), "%s depends on %s transitively; its package doc forbids %s", name, dep, banned)
		}
	}
	for _, req := range rule.required {
		require.Containsf(t, p.Imports, module+"/"+req, "%s must import %s directly", name, req)
	}
}
