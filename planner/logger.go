package planner

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/lni/dragonboat/v4/logger"
)

var installLogger sync.Once

// routeDragonboatLogs sends dragonboat's logs (a process-wide setting that
// can be made once) to slog.Default(). dragonboat logs routine events as
// warnings (every election, a dropped proposal while there is no leader)
// and errors (a peer unreachable), so its info and warning lines go to
// Debug and its errors to Warn.
func routeDragonboatLogs() {
	installLogger.Do(func() {
		logger.SetLoggerFactory(func(pkg string) logger.ILogger { return &slogLogger{pkg: pkg} })
	})
}

// slogLogger is dragonboat's logger.ILogger on slog.Default().
type slogLogger struct{ pkg string }

func (l *slogLogger) log(level slog.Level, format string, args []any) {
	lg := slog.Default()
	if lg.Enabled(context.Background(), level) {
		lg.Log(context.Background(), level, "dragonboat: "+fmt.Sprintf(format, args...), "pkg", l.pkg)
	}
}

func (l *slogLogger) SetLevel(logger.LogLevel)            {}
func (l *slogLogger) Debugf(format string, args ...any)   { l.log(slog.LevelDebug-4, format, args) }
func (l *slogLogger) Infof(format string, args ...any)    { l.log(slog.LevelDebug, format, args) }
func (l *slogLogger) Warningf(format string, args ...any) { l.log(slog.LevelDebug, format, args) }
func (l *slogLogger) Errorf(format string, args ...any)   { l.log(slog.LevelWarn, format, args) }
func (l *slogLogger) Panicf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log(slog.LevelError, "%s", []any{msg})
	panic("dragonboat: " + msg)
}
