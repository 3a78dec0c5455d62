package supervise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotReady is returned (wrapped) when a child exits, times out or is
// interrupted before printing its ready lines.
var ErrNotReady = errors.New("supervise: child not ready")

// Group is a set of child processes. Children are started from one OS
// thread that stays locked for the group's lifetime, so that the Linux
// parent-death signal (tied to the thread that forked) fires only when the
// parent process dies, or when Stop is done with them. Start and Stop are
// called from one goroutine.
type Group struct {
	name        string // what a child is, in messages: "server"
	logs        io.Writer
	logPrefix   string
	stopTimeout time.Duration

	children []*Child
	spawn    chan spawnRequest
	spawned  chan struct{} // closed when the spawner thread is gone
	stopOnce sync.Once
	stopErr  error
}

// Child is one started process.
type Child struct {
	// Cmd is the running command (Cmd.Process.Pid names it).
	Cmd *exec.Cmd
	// Ready are its first stdout lines, the ones Start waited for.
	Ready []string
	done  chan struct{} // closed when the process has been waited for
	err   error         // its exit status, once done

	mu       sync.Mutex
	signaled bool // the parent sent it a signal on purpose (Signal)
}

// Signal sends sig to the child on purpose (a churn harness killing or
// stopping it): Stop then never reports its exit status as a failure.
// It reports the kill(2) error (os.ErrProcessDone once it is gone).
func (c *Child) Signal(sig syscall.Signal) error {
	c.mu.Lock()
	c.signaled = true
	c.mu.Unlock()
	return c.Cmd.Process.Signal(sig)
}

// Done is closed once the child has exited and been waited for.
func (c *Child) Done() <-chan struct{} { return c.done }

func (c *Child) wasSignaled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.signaled
}

type spawnRequest struct {
	cmd *exec.Cmd
	err chan error
}

// NewGroup returns an empty group. name says what a child is in messages
// ("server"); each line a child writes to stderr is copied to logs behind
// logPrefix; Stop waits stopTimeout after SIGTERM before SIGKILL.
func NewGroup(name string, logs io.Writer, logPrefix string, stopTimeout time.Duration) *Group {
	g := &Group{name: name, logs: logs, logPrefix: logPrefix, stopTimeout: stopTimeout,
		spawn: make(chan spawnRequest), spawned: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer close(g.spawned)
		for r := range g.spawn {
			r.err <- r.cmd.Start()
		}
	}()
	return g
}

// Start runs `exe args...` as a child of the group and waits until it has
// printed ready lines on stdout (its later stdout is discarded), within
// timeout. Errors: the start error, or ErrNotReady naming the child and
// why (it exited, with its stderr; the timeout; ctx's end). The child
// stays in the group either way: Stop ends it.
func (g *Group) Start(ctx context.Context, timeout time.Duration, ready int, exe string, args ...string) (*Child, error) {
	rw := NewReadyWriter(ready)
	var stderr bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Stdout = rw
	cmd.Stderr = io.MultiWriter(&stderr, &prefixWriter{w: g.logs, prefix: g.logPrefix})
	cmd.SysProcAttr = childSysProcAttr()
	errc := make(chan error, 1)
	g.spawn <- spawnRequest{cmd: cmd, err: errc}
	if err := <-errc; err != nil {
		return nil, fmt.Errorf("supervise: start %s: %w", exe, err)
	}
	c := &Child{Cmd: cmd, done: make(chan struct{})}
	g.children = append(g.children, c)
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(c.Ready) < ready {
		select {
		case line := <-rw.Lines():
			c.Ready = append(c.Ready, line)
		case <-c.done:
			return nil, fmt.Errorf("%w: %s %s exited before it was ready (%v): %s", ErrNotReady, g.name, strings.Join(args, " "), c.err, strings.TrimSpace(stderr.String()))
		case <-timer.C:
			return nil, fmt.Errorf("%w: %s %d was not ready within %v", ErrNotReady, g.name, cmd.Process.Pid, timeout)
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: interrupted while starting the %ss: %w", ErrNotReady, g.name, ctx.Err())
		}
	}
	return c, nil
}

// Stop sends SIGTERM to every child, waits up to the stop timeout, sends
// SIGKILL to the ones still running, waits for them all and ends the
// spawner thread; it reports "stopped N <name>s (pids ...)" to logs. It
// returns an error naming the children that exited with a failure status
// after SIGTERM, except those sent a signal with Child.Signal. It is idempotent.
func (g *Group) Stop() error {
	g.stopOnce.Do(func() {
		for _, c := range g.children {
			_ = c.Cmd.Process.Signal(syscall.SIGTERM)
			resume(c.Cmd.Process) // a stopped child must run to see SIGTERM
		}
		timer := time.NewTimer(g.stopTimeout)
		defer timer.Stop()
		var killed []int
		for _, c := range g.children {
			select {
			case <-c.done:
				continue // already gone: never count it as killed
			default:
			}
			select {
			case <-c.done:
			case <-timer.C:
				timer.Reset(0) // expired: kill the rest without waiting again
				_ = c.Cmd.Process.Kill()
				killed = append(killed, c.Cmd.Process.Pid)
				<-c.done
			}
		}
		close(g.spawn)
		<-g.spawned
		pids := make([]string, len(g.children))
		var failed []string
		for i, c := range g.children {
			pids[i] = fmt.Sprint(c.Cmd.Process.Pid)
			if c.err != nil && !slices.Contains(killed, c.Cmd.Process.Pid) && !c.wasSignaled() {
				failed = append(failed, fmt.Sprintf("%d: %v", c.Cmd.Process.Pid, c.err))
			}
		}
		if len(g.children) > 0 {
			fmt.Fprintf(g.logs, "%sstopped %d %ss (pids %s)", strings.TrimSuffix(g.logPrefix, g.name+": "), len(g.children), g.name, strings.Join(pids, " "))
			if len(killed) > 0 {
				fmt.Fprintf(g.logs, ", killed %v after %v", killed, g.stopTimeout)
			}
			fmt.Fprintln(g.logs)
		}
		if len(failed) > 0 {
			g.stopErr = fmt.Errorf("supervise: %ss failed on shutdown: %s", g.name, strings.Join(failed, "; "))
		}
	})
	return g.stopErr
}

// maxKept bounds what a ReadyWriter keeps of a child's stdout, bytes.
const maxKept = 64 << 10

// ReadyWriter is a child's stdout: it hands its first n lines (the first
// line when n is 0) to Lines as they complete, and keeps what the child
// writes, up to 64 KiB, for Output. It is safe for concurrent use.
type ReadyWriter struct {
	mu   sync.Mutex
	all  []byte // everything written, up to maxKept
	next int    // offset in all of the first byte not yet handed on as a line
	sent int
	n    int
	line chan string
}

// NewReadyWriter returns a writer handing on its first n lines.
func NewReadyWriter(n int) *ReadyWriter {
	return &ReadyWriter{n: n, line: make(chan string, max(n, 1))}
}

// Lines delivers the first n lines, without their newline.
func (w *ReadyWriter) Lines() <-chan string { return w.line }

// Output returns what was written so far (at most 64 KiB).
func (w *ReadyWriter) Output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.all)
}

func (w *ReadyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := maxKept - len(w.all); room > 0 {
		w.all = append(w.all, p[:min(len(p), room)]...)
	}
	for w.sent < max(w.n, 1) {
		i := bytes.IndexByte(w.all[w.next:], '\n')
		if i < 0 {
			break
		}
		w.sent++
		w.line <- string(w.all[w.next : w.next+i])
		w.next += i + 1
	}
	return len(p), nil
}

// prefixWriter writes each line of a child's stderr with a prefix.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		fmt.Fprintf(w.w, "%s%s\n", w.prefix, w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}
