package fullrange

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigValidate checks that each bad flag is named.
func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.BackendURL, ok.Blocks = "http://127.0.0.1:8000", 32
	require.NoError(t, ok.Validate())
	for _, tt := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no backend", func(c *Config) { c.BackendURL = "" }, "--backend-url is required"},
		{"backend without scheme", func(c *Config) { c.BackendURL = "127.0.0.1:8000" }, "want http://HOST:PORT"},
		{"no blocks", func(c *Config) { c.Blocks = 0 }, "--n-blocks L"},
		{"poll", func(c *Config) { c.HealthInterval = 0 }, "--health-interval 0s"},
		{"start timeout", func(c *Config) { c.StartTimeout = -1 }, "--start-timeout"},
		{"measure", func(c *Config) { c.MeasureTokens = 1 }, "--measure-tokens 1, want >= 2"},
		{"listen", func(c *Config) { c.Listen = "8000" }, `--listen "8000"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrBadConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
