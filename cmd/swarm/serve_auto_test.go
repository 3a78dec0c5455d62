package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/fleet"
	"github.com/swarmllm/swarm/internal/launch"
	"github.com/swarmllm/swarm/internal/testenv"
)

// swarmServer is a running `swarm serve` process in the swarm: what its two
// ready lines said, and its process.
type swarmServer struct {
	cmd    *exec.Cmd
	url    string   // websocket URL, or libp2p://PEERID/... with --listen none
	id     string   // peer id
	span   string   // hosted blocks, START:END
	addrs  []string // libp2p multiaddrs with /p2p/ID
	stderr *testenv.Buffer
	done   chan struct{} // closed when the process exited; then err is set
	err    error
}

// startSwarmServer starts `swarm serve args...` (stdout read for its two
// ready lines by a goroutine); wait with ready. Cleanup kills it if it still
// runs.
func startSwarmServer(t *testing.T, args ...string) (*swarmServer, <-chan error) {
	t.Helper()
	return startSwarmServerCmd(t, exec.Command(testenv.SwarmBinary(t), append([]string{"serve"}, args...)...))
}

// startSwarmServerCmd is startSwarmServer for a prepared `swarm serve`
// command (its environment set).
func startSwarmServerCmd(t *testing.T, cmd *exec.Cmd) (*swarmServer, <-chan error) {
	t.Helper()
	p := &swarmServer{cmd: cmd, stderr: &testenv.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready := make(chan error, 1)
	go func() {
		ready <- p.readReady(bufio.NewReader(stdout))
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p, ready
}

// readReady parses the ready lines:
//
//	swarm serve: listening on URL
//	swarm serve: registry {"id": ..., "blocks": ..., "addrs": [...]}
func (p *swarmServer) readReady(r *bufio.Reader) error {
	line1, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("no ready line (%w)", err)
	}
	line2, err := r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("no registry line after %q (%w)", line1, err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line1), launch.ServeReadyPrefix)
	if !ok {
		return fmt.Errorf("first line %q", line1)
	}
	js, ok := strings.CutPrefix(strings.TrimSpace(line2), launch.ServeRegistryPrefix)
	if !ok {
		return fmt.Errorf("second line %q", line2)
	}
	var v struct {
		ID     string   `json:"id"`
		Blocks string   `json:"blocks"`
		Addrs  []string `json:"addrs"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		return fmt.Errorf("second line %q: %w", line2, err)
	}
	p.url, p.id, p.span, p.addrs = url, v.ID, v.Blocks, v.Addrs
	return nil
}

// waitReady waits for a server's ready lines.
func waitReady(t *testing.T, p *swarmServer, ready <-chan error) {
	t.Helper()
	select {
	case err := <-ready:
		require.NoError(t, err, "stderr: %s", p.stderr)
	case <-time.After(2 * time.Minute):
		t.Fatalf("swarm serve not ready within 2 minutes: %s", p.stderr)
	}
}

// storiesFlags are the model flags of stories260K's llama2.c checkpoint.
func storiesFlags(t *testing.T) []string {
	dir := testenv.SharedFile(t, "models", "stories260K")
	return []string{"--model", dir + "/stories260K.bin", "--tokenizer", dir + "/tok512.bin"}
}

// memoryForBlocks returns the --memory for which CG-BP line 1 gives a
// server m blocks of stories260K with R = 1 and --max-length 512:
// m (s_m + s_c), s_m and s_c read from the model (paper 003 eq. 2). The
// capacity (15) is then f_j = 1 session.
func memoryForBlocks(t *testing.T, m int) string {
	t.Helper()
	dir := testenv.SharedFile(t, "models", "stories260K")
	mdl, err := blocks.Open(dir + "/stories260K.bin")
	require.NoError(t, err)
	defer mdl.Close()
	info := mdl.Info()
	return strconv.FormatInt(int64(m)*(info.BlockBytes+info.CacheBytes(512)), 10)
}

// storiesServers returns the stories260K entries of `swarm status --json`
// by id.
func storiesServers(t require.TestingT, bin, bootstrap string, regFlags []string) map[string]statusServer {
	cmd := exec.Command(bin, append([]string{"status", "--json", "--wait", "10s", "--bootstrap", bootstrap}, regFlags...)...)
	out, err := cmd.Output()
	require.NoError(t, err)
	var v struct {
		Servers []statusServer `json:"servers"`
	}
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	m := map[string]statusServer{}
	for _, s := range v.Servers {
		if s.Model == "stories260K" {
			m[s.ID] = s
		}
	}
	return m
}

// spansOf returns the sorted spans of the servers in state.
func spansOf(servers map[string]statusServer, state string) []string {
	var out []string
	for _, s := range servers {
		if s.State == state {
			out = append(out, fmt.Sprintf("%d:%d", s.Start, s.End))
		}
	}
	slices.Sort(out)
	return out
}

// bootstrapIdentity creates a node key, and returns its file and the
// bootstrap address of a node listening on a free loopback port with it.
func bootstrapIdentity(t *testing.T) (keyFile, listen, addr string) {
	t.Helper()
	keyFile = filepath.Join(t.TempDir(), "boot.key")
	out, errOut, code := runP2PCmd(t, "identity", "--identity", keyFile)
	require.Zero(t, code, errOut)
	port := freeLoopbackPort(t)
	listen = fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port)
	return keyFile, listen, listen + "/p2p/" + strings.TrimSpace(out)
}

// TestServeAuto_FiveServers is the acceptance test of issue 5 with real
// processes on loopback and the registry's default (LAN) timing: five
// `swarm serve --blocks auto` started at the same moment, each with memory
// for 2 blocks, one of them the bootstrap node; `swarm status --json` lists
// five SERVING servers covering every block with the spans of five
// sequential CG-BP joins, and `swarm generate --bootstrap` prints llama2.c's
// reference text. Then the only server of block 4 is SIGKILLed: the time
// until `swarm status` shows it out of routing is measured, a new --blocks
// auto server takes its blocks, and a new generate succeeds; finally a
// SIGTERMed server exits 0 announcing LEFT.
func TestServeAuto_FiveServers(t *testing.T) {
	bin := testenv.SwarmBinary(t)
	model := storiesFlags(t)
	keyFile, listen, boot := bootstrapIdentity(t)
	cache := t.TempDir()
	common := append([]string{"--blocks", "auto", "--memory", memoryForBlocks(t, 2), "--target-sessions", "1",
		"--max-length", "512", "--measure-cache", cache, "--listen", "127.0.0.1:0", "--drain-timeout", "2s"}, model...)
	type started struct {
		p     *swarmServer
		ready <-chan error
	}
	var all []started
	p, r := startSwarmServer(t, append([]string{"--identity", keyFile, "--p2p-listen", listen}, common...)...)
	all = append(all, started{p, r})
	for range 4 {
		p, r := startSwarmServer(t, append([]string{"--bootstrap", boot, "--p2p-listen", "/ip4/127.0.0.1/tcp/0"}, common...)...)
		all = append(all, started{p, r})
	}
	begin := time.Now()
	byID := map[string]*swarmServer{}
	for _, s := range all {
		waitReady(t, s.p, s.ready)
		byID[s.p.id] = s.p
	}
	t.Logf("5 servers SERVING %v after their simultaneous start", time.Since(begin).Round(time.Millisecond))

	servers := storiesServers(t, bin, boot, nil)
	require.Len(t, servers, 5)
	require.Equal(t, []string{"0:2", "0:2", "1:3", "2:4", "3:5"}, spansOf(servers, "SERVING"),
		"the spans of sequential joins, not five times 0:2")
	for id, s := range servers {
		require.Equal(t, byID[id].span, fmt.Sprintf("%d:%d", s.Start, s.End))
		require.Greater(t, s.Tau, 0.0)
		require.Equal(t, "cpu", s.Device)
		require.Contains(t, []string{"go", "avx2+q32i8+f16x8", "avx2+avx512", "avx2+avx512+vnni"}, s.Kernels,
			"the kernel set, advertised in the signed registry entry (replay is bit-exact only between equal kernels)")
		require.NotEmpty(t, s.TauBatch, "the batch curve routing prices busy servers by")
		require.Equal(t, 1, s.TauBatch[0].Batch)
	}

	// The live fleet as a fleet file: `swarm plan` takes it, with the live
	// spans and the R the servers were placed with.
	out, errOut, code := runSwarm(t, "status", "--fleet", "--wait", "10s", "--bootstrap", boot)
	require.Zero(t, code, errOut)
	fleetFile := filepath.Join(t.TempDir(), "fleet.json")
	require.NoError(t, os.WriteFile(fleetFile, []byte(out), 0o644))
	fl, err := fleet.Load(fleetFile)
	require.NoError(t, err)
	require.Equal(t, 1, fl.TargetSessions)
	var live []string
	for _, sp := range fl.Spans {
		live = append(live, sp.String())
	}
	slices.Sort(live)
	require.Equal(t, spansOf(servers, "SERVING"), live)
	_, errOut, code = runSwarm(t, "plan", "--config", fleetFile, "--algorithm", "cgbp")
	require.Zero(t, code, errOut)

	want := referenceText(t) + "\n"
	gen := append([]string{"generate", "--bootstrap", boot, "--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--temperature", "0", "--max-tokens", "200", "--stats"}, model...)
	out, errOut, code = runSwarmProcess(t, gen...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, want, out)
	require.Contains(t, errOut, "generated 200; TTFT")

	// SIGKILL the only server of block 4: no LEFT is announced.
	var victim *swarmServer
	for _, p := range byID {
		if p.span == "3:5" {
			victim = p
		}
	}
	require.NotNil(t, victim)
	require.NoError(t, victim.cmd.Process.Kill())
	killed := time.Now()
	var removed time.Duration
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		s, ok := storiesServers(ct, bin, boot, nil)[victim.id]
		if ok {
			require.NotEqual(ct, "SERVING", s.State)
		}
		removed = time.Since(killed)
	}, 30*time.Second, 50*time.Millisecond)
	t.Logf("SIGKILLed server out of routing (SUSPECTED or absent in swarm status) %v after the kill", removed.Round(time.Millisecond))
	require.Less(t, removed, 5*time.Second, "LAN timing: SUSPECTED after 3 s of silence (+1 s clock skew for a fresh reader)")

	// A new server takes the blocks nobody serves any more.
	p, r = startSwarmServer(t, append([]string{"--bootstrap", boot, "--p2p-listen", "/ip4/127.0.0.1/tcp/0"}, common...)...)
	waitReady(t, p, r)
	require.Equal(t, "3:5", p.span)
	out, errOut, code = runSwarmProcess(t, gen...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, want, out)
	require.Regexp(t, regexp.QuoteMeta(p.url)+` blocks [34]:5: 200 steps`, errOut, "the new server serves block 4")

	// SIGTERM: LEFT, exit 0.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		require.NoError(t, p.err, "stderr: %s", p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("swarm serve did not exit on SIGTERM")
	}
	require.Contains(t, p.stderr.String(), "announced LEFT")
	require.Equal(t, "LEFT", storiesServers(t, bin, boot, nil)[p.id].State)
}

// TestServeAuto_Sequential starts five --blocks auto servers one after
// another (each SERVING before the next starts), each with memory for 2
// blocks: their spans are those of Alg. 1 lines 4-7 worked by hand
// (node.TestChooseSpan_Sequential): 0:2, then the most unserved window 2:4,
// the only window holding block 4, 3:5, then the least served windows 0:2
// and 1:3.
func TestServeAuto_Sequential(t *testing.T) {
	keyFile, listen, boot := bootstrapIdentity(t)
	common := append(append([]string{"--blocks", "auto", "--memory", memoryForBlocks(t, 2), "--target-sessions", "1",
		"--max-length", "512", "--measure-cache", t.TempDir(), "--listen", "none"}, storiesFlags(t)...), fastRegistryFlags...)
	var spans []string
	for i := range 5 {
		args := []string{"--bootstrap", boot, "--p2p-listen", "/ip4/127.0.0.1/tcp/0"}
		if i == 0 {
			args = []string{"--identity", keyFile, "--p2p-listen", listen}
		}
		start := time.Now()
		p, r := startSwarmServer(t, append(args, common...)...)
		waitReady(t, p, r)
		t.Logf("server %d SERVING blocks %s %v after its start", i+1, p.span, time.Since(start).Round(time.Millisecond))
		require.Equal(t, "libp2p://"+p.id+"/swarm/inference/1", p.url, "--listen none")
		spans = append(spans, p.span)
	}
	require.Equal(t, []string{"0:2", "2:4", "3:5", "0:2", "1:3"}, spans)
}

// TestServeStreamOnly serves blocks 3:5 from a server without websocket
// (--listen none): generate --bootstrap reaches it over /swarm/inference/1
// and prints the reference text.
func TestServeStreamOnly(t *testing.T) {
	keyFile, listen, boot := bootstrapIdentity(t)
	model := storiesFlags(t)
	cache := t.TempDir()
	first, r1 := startSwarmServer(t, append(append([]string{"--blocks", "0:3", "--identity", keyFile, "--p2p-listen", listen,
		"--measure-cache", cache}, model...), fastRegistryFlags...)...)
	second, r2 := startSwarmServer(t, append(append([]string{"--blocks", "3:5", "--listen", "none", "--bootstrap", boot,
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0", "--measure-cache", cache}, model...), fastRegistryFlags...)...)
	waitReady(t, first, r1)
	waitReady(t, second, r2)
	require.True(t, strings.HasPrefix(first.url, "ws://127.0.0.1:"), first.url)
	require.Equal(t, "libp2p://"+second.id+"/swarm/inference/1", second.url)

	out, errOut, code := runSwarmProcess(t, append(append([]string{"generate", "--bootstrap", boot, "--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--temperature", "0", "--max-tokens", "200", "--stats"}, model...), fastRegistryFlags...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, referenceText(t)+"\n", out)
	require.Contains(t, errOut, "hop 1/2 "+first.url+" blocks 0:3: 200 steps")
	require.Contains(t, errOut, "hop 2/2 "+second.url+" blocks 3:5: 200 steps")
}

// TestServeAutoErrors checks the flag errors of serve in the swarm and of
// generate --bootstrap.
func TestServeAutoErrors(t *testing.T) {
	model := storiesFlags(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"memory below one block and one cache", []string{"--blocks", "auto", "--memory", "300000", "--target-sessions", "1",
			"--max-length", "512"}, 2, "cannot hold one block (181760 bytes) plus R = 1 attention caches (131072 bytes each)"},
		{"no sessions", []string{"--blocks", "auto", "--target-sessions", "0"}, 2, "--target-sessions 0"},
		{"negative max length", []string{"--blocks", "auto", "--max-length", "-1"}, 2, "--max-length -1"},
		{"bad blocks", []string{"--blocks", "automatic"}, 2, "or auto"},
		{"bad bootstrap", []string{"--blocks", "0:5", "--bootstrap", "/ip4/127.0.0.1/tcp/1"}, 2, "/p2p/PEERID"},
		{"empty listen", []string{"--blocks", "0:5", "--listen", ""}, 2, "--listen is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"serve", "--p2p-listen", "/ip4/127.0.0.1/tcp/0", "--measure-cache", t.TempDir()}, tt.args...), model...)
			out, errOut, code := runSwarmProcess(t, args...)
			require.Equal(t, tt.code, code, "stdout %q stderr %q", out, errOut)
			require.Contains(t, errOut, tt.want)
			require.Empty(t, out, "no ready line")
		})
	}

	// generate: only blocks 0:3 are served; the wait ends naming 3:5.
	keyFile, listen, boot := bootstrapIdentity(t)
	p, r := startSwarmServer(t, append(append([]string{"--blocks", "0:3", "--identity", keyFile, "--p2p-listen", listen,
		"--listen", "none", "--measure-cache", t.TempDir()}, model...), fastRegistryFlags...)...)
	waitReady(t, p, r)
	gen := append([]string{"generate", "--bootstrap", boot, "--p2p-listen", "/ip4/127.0.0.1/tcp/0", "--max-tokens", "5"}, model...)
	_, errOut, code := runSwarmProcess(t, append(gen, "--wait", "1s")...)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "no SERVING server of stories260K hosts blocks 3:5 (of 0:5; 1 SERVING servers of the model)")
	_, errOut, code = runSwarmProcess(t, append(gen, "--wait", "0s")...)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--wait 0s")
	_, errOut, code = runSwarmProcess(t, append(gen, "--wait", "1s", "--providers", "acme")...)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "hosts blocks 0:5 (of 0:5; 0 SERVING servers", "no server of provider acme")
}
