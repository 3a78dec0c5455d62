package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/swarmllm/swarm/blocks"
	"github.com/swarmllm/swarm/client"
)

// Direct returns a Request that opens a session of c for prompt (token
// ids) and maxTokens tokens, generates them greedily with the client
// library and closes the session. Its Sample.Err is the client's error.
func Direct(c *client.Client, prompt []int, maxTokens int) Request {
	return func(ctx context.Context) Sample {
		start := time.Now()
		var s Sample
		sess, err := c.Open(ctx, len(prompt)+maxTokens-1)
		if err != nil {
			s.Err = err
			return s
		}
		defer sess.Close()
		sampler, err := blocks.NewSampler(blocks.SamplerConfig{})
		if err != nil {
			s.Err = err
			return s
		}
		for _, err := range sess.Generate(ctx, prompt, maxTokens, sampler) {
			if err != nil {
				s.Err = err
				return s
			}
			if s.Tokens == 0 {
				s.TTFT = time.Since(start)
			}
			s.Tokens++
		}
		s.Total = time.Since(start)
		return s
	}
}

// Completions returns a Request that POSTs a greedy streaming completion
// of prompt, maxTokens tokens of model, to baseURL + "/v1/completions"
// (the OpenAI-compatible API) with hc, and counts each event whose first
// choice has text as a token (its text goes to Sample.Text), until "[DONE]" or the end of the stream.
// Its Sample.Err is the transport's error, the body of a status other
// than 200 OK ("HTTP STATUS: BODY"), or a malformed event.
func Completions(hc *http.Client, baseURL, model, prompt string, maxTokens int) Request {
	return func(ctx context.Context) Sample {
		start := time.Now()
		var s Sample
		body, err := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": maxTokens, "temperature": 0, "stream": true})
		if err != nil {
			s.Err = err
			return s
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/completions", bytes.NewReader(body))
		if err != nil {
			s.Err = err
			return s
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			s.Err = err
			return s
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			s.Err = fmt.Errorf("HTTP %s: %s", resp.Status, b)
			return s
		}
		s.Err = readStream(resp.Body, start, &s)
		return s
	}
}

// readStream counts the tokens of a completion's event stream into s and
// appends their text to s.Text.
func readStream(r io.Reader, start time.Time, s *Sample) error {
	for ev, err := range sse.Read(r, nil) {
		if err != nil {
			return err
		}
		if ev.Data == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
			return err
		}
		if len(ch.Choices) > 0 && ch.Choices[0].Text != "" {
			s.Text += ch.Choices[0].Text
			if s.Tokens == 0 {
				s.TTFT = time.Since(start)
			}
			s.Tokens++
		}
	}
	s.Total = time.Since(start)
	return nil
}
