package churn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/swarmllm/swarm/ingress/loadtest"
)

// SlowBodies is what the slow-body attacker saw: connections to the
// proxy that send a request's headers and two bytes of its body, then
// nothing (slowloris), each waiting for the proxy to hang up.
type SlowBodies struct {
	// Conns counts the connections opened; DialErrors the ones refused.
	Conns      int `json:"conns"`
	DialErrors int `json:"dial_errors"`
	// Closed counts the connections the proxy closed; NotClosed the ones
	// still open when the attacker gave up (ReadTimeout + slowBodyGrace).
	Closed    int `json:"closed"`
	NotClosed int `json:"not_closed"`
	// ReadTimeoutS is the proxy's --read-timeout, seconds; the close times
	// are from each connection's dial to the proxy's hang-up, seconds.
	ReadTimeoutS float64 `json:"read_timeout_s"`
	P50CloseS    float64 `json:"p50_close_s"`
	MaxCloseS    float64 `json:"max_close_s"`
}

// slowBodyGrace is how long past the proxy's read timeout a slow-body
// connection may stay open before it counts as not closed.
const slowBodyGrace = 5 * time.Second

// slowBodies opens n slow-body connections to the proxy at addr (HOST:PORT)
// from attackerAddr, all at once, and waits for each to be closed by the
// proxy or for readTimeout + slowBodyGrace, whichever comes first.
func slowBodies(ctx context.Context, addr string, n int, readTimeout time.Duration) SlowBodies {
	st := SlowBodies{ReadTimeoutS: readTimeout.Seconds()}
	var (
		mu    sync.Mutex
		times []float64
		wg    sync.WaitGroup
	)
	dialer := &net.Dialer{LocalAddr: attackerAddr, Timeout: 10 * time.Second}
	for range n {
		wg.Go(func() {
			start := time.Now()
			c, err := dialer.DialContext(ctx, "tcp", addr)
			mu.Lock()
			st.Conns++
			if err != nil {
				st.DialErrors++
				mu.Unlock()
				return
			}
			mu.Unlock()
			defer c.Close()
			_, _ = io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: swarm\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"")
			_ = c.SetReadDeadline(start.Add(readTimeout + slowBodyGrace))
			_, err = io.Copy(io.Discard, c) // until the proxy hangs up (or answers, then hangs up)
			var ne net.Error
			timedOut := err != nil && errors.As(err, &ne) && ne.Timeout()
			mu.Lock()
			defer mu.Unlock()
			if timedOut {
				st.NotClosed++
				return
			}
			st.Closed++
			times = append(times, time.Since(start).Seconds())
		})
	}
	wg.Wait()
	slices.Sort(times)
	st.P50CloseS = loadtest.Percentile(times, 0.5)
	if len(times) > 0 {
		st.MaxCloseS = times[len(times)-1]
	}
	return st
}

// HugePrompt is how the proxy answered completions whose prompt is far
// larger than the model's context: each must be refused with 400 quickly
// and without the proxy's memory growing by the prompt's size.
type HugePrompt struct {
	// Bytes is the prompt's size; Requests how many were sent, one after
	// another; Statuses their HTTP statuses.
	Bytes    int   `json:"bytes"`
	Requests int   `json:"requests"`
	Statuses []int `json:"statuses"`
	// P50S and MaxS are the request times, seconds, from the first byte
	// sent to the whole answer read (the body is sent from memory).
	P50S float64 `json:"p50_s"`
	MaxS float64 `json:"max_s"`
	// RSS and peak RSS of the proxy process (/proc/PID/status VmRSS and
	// VmHWM) before the first request and after the last, bytes; 0 where
	// /proc is unreadable.
	RSSBefore  int64 `json:"rss_before_bytes"`
	RSSAfter   int64 `json:"rss_after_bytes"`
	PeakBefore int64 `json:"peak_rss_before_bytes"`
	PeakAfter  int64 `json:"peak_rss_after_bytes"`
}

// hugePrompts sends requests completions of model with a prompt of size
// bytes to the proxy at url, one after another, measuring the proxy
// process pid's memory around them.
func hugePrompts(ctx context.Context, url, model string, pid, size, requests int) (HugePrompt, error) {
	prompt := strings.Repeat("Once upon a time, ", size/18+1)[:size]
	body, err := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": 1})
	if err != nil {
		return HugePrompt{}, err
	}
	h := HugePrompt{Bytes: size, Requests: requests}
	h.RSSBefore, h.PeakBefore = procMemory(pid)
	var times []float64
	hc := &http.Client{Timeout: time.Minute}
	for range requests {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", bytes.NewReader(body))
		if err != nil {
			return h, err
		}
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return h, fmt.Errorf("churn: huge prompt: %w", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		times = append(times, time.Since(start).Seconds())
		h.Statuses = append(h.Statuses, resp.StatusCode)
	}
	h.RSSAfter, h.PeakAfter = procMemory(pid)
	slices.Sort(times)
	h.P50S, h.MaxS = loadtest.Percentile(times, 0.5), times[len(times)-1]
	return h, nil
}

// procMemory reads VmRSS and VmHWM of process pid in bytes (Linux /proc;
// zeros elsewhere).
func procMemory(pid int) (rss, peak int64) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			peak = n << 10
		}
	}
	return rss, peak
}
