package main

import (
	"fmt"
	"io"
	"log/slog"
)

// logFormatHelp is the --log-format flag's help.
const logFormatHelp = "stderr log format: text (key=value lines) or json (one JSON object per line)"

// newLogger is the stderr logger of --log-level (debug, info, warn, error)
// and --log-format (text, json); errors are usage errors naming the flag.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", errUsage, level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: want text or json", errUsage, format)
}
