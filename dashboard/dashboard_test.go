package dashboard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/swarmllm/swarm/dashboard"
)

// TestMount serves the page's files from the binary: GET / is the HTML
// that loads the script and style from AssetsPrefix, which are served with
// their types; other paths are not the dashboard's.
func TestMount(t *testing.T) {
	mux := http.NewServeMux()
	dashboard.Mount(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()
	tests := []struct {
		path, contentType, contains string
		status                      int
	}{
		{"/", "text/html; charset=utf-8", `<script src="/dashboard/app.js"></script>`, 200},
		{"/dashboard/app.js", "text/javascript; charset=utf-8", `fetch("/api/v1/state"`, 200},
		{"/dashboard/style.css", "text/css; charset=utf-8", ".cov-cell", 200},
		{"/dashboard/missing.js", "", "", 404},
		{"/other", "", "", 404},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, err := http.Get(hs.URL + tt.path)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.status, resp.StatusCode)
			if tt.status == 200 {
				require.Equal(t, tt.contentType, resp.Header.Get("Content-Type"))
				require.Contains(t, string(b), tt.contains)
			}
		})
	}
	for path, want := range map[string]bool{"/": true, "/dashboard/app.js": true, "/dashboard/": false, "/api/v1/state": false, "/v1/info": false} {
		require.Equal(t, want, dashboard.IsPage(path), path)
	}
}
