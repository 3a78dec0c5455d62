package servertest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFitsInline: the default model stays below blocks' parallel threshold
// for sessions of its whole context; a longer context does not.
func TestFitsInline(t *testing.T) {
	require.NoError(t, fitsInline(ModelConfig()))
	long := ModelConfig()
	long.MaxSeqLen = 64
	require.ErrorContains(t, fitsInline(long), "the attention of 64 tokens is 131072 multiply-adds")
}
