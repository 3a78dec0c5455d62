package hub

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
)

// OptionsFromEnv returns the Options the CLI uses, read from the process
// environment through getenv (os.Getenv; a map lookup in tests):
//
//   - ModelsDir: $SWARM_MODELS, else "../shared/models" relative to the
//     working directory when that directory exists, else empty;
//   - Endpoint: $HF_ENDPOINT (Hugging Face's own variable), else empty
//     (DefaultEndpoint);
//   - CacheDir: empty (os.UserCacheDir()/swarm/models);
//   - Token: $HF_TOKEN (Hugging Face's own variable);
//   - Offline: $HF_HUB_OFFLINE is 1, true or yes (Hugging Face's own);
//   - Retries and RetryWait: 3 retries, 1 s apart at first;
//   - Progress: stderr when it is a terminal, else nil. Set it yourself to
//     force a progress bar.
func OptionsFromEnv(getenv func(string) string, stderr *os.File) Options {
	opts := Options{ModelsDir: getenv("SWARM_MODELS"), Endpoint: getenv("HF_ENDPOINT"), Token: getenv("HF_TOKEN"),
		Retries: 3, RetryWait: time.Second}
	switch strings.ToLower(getenv("HF_HUB_OFFLINE")) {
	case "1", "true", "yes", "on":
		opts.Offline = true
	}
	if opts.ModelsDir == "" {
		shared := filepath.Join("..", "shared", "models")
		if st, err := os.Stat(shared); err == nil && st.IsDir() {
			opts.ModelsDir = shared
		}
	}
	if stderr != nil && (isatty.IsTerminal(stderr.Fd()) || isatty.IsCygwinTerminal(stderr.Fd())) {
		opts.Progress = stderr
	}
	return opts
}
