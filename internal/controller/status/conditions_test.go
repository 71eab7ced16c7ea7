package status

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTruncateKeepsCharactersWhole cuts messages of one- to four-byte
// characters at every offset around the limit: the result is valid UTF-8,
// within the limit, ends with "..." when cut, and keeps everything before
// the cut.
func TestTruncateKeepsCharactersWhole(t *testing.T) {
	for _, ch := range []string{"a", "ä", "€", "🪣"} {
		for pad := range 8 {
			msg := strings.Repeat("x", pad) + strings.Repeat(ch, maxMessage/len(ch)+2)
			got := truncate(msg)
			if !utf8.ValidString(got) {
				t.Errorf("%q after %d bytes of padding: want valid UTF-8, got a cut character at the end: %q", ch, pad, got[len(got)-8:])
			}
			if len(got) > maxMessage {
				t.Errorf("%q after %d bytes of padding: want at most %d bytes, got %d", ch, pad, maxMessage, len(got))
			}
			if !strings.HasSuffix(got, "...") {
				t.Errorf("%q after %d bytes of padding: want a cut message to end with ..., got %q", ch, pad, got[len(got)-8:])
			}
			if kept := strings.TrimSuffix(got, "..."); !strings.HasPrefix(msg, kept) || len(kept) < maxMessage-len("...")-utf8.UTFMax+1 {
				t.Errorf("%q after %d bytes of padding: want the message kept up to the last whole character before the cut, got %d bytes", ch, pad, len(kept))
			}
		}
	}
}

func TestTruncateLeavesShortMessages(t *testing.T) {
	for _, msg := range []string{"", "ok", strings.Repeat("€", maxMessage/3), strings.Repeat("x", maxMessage)} {
		if got := truncate(msg); got != msg {
			t.Errorf("message of %d bytes: want it unchanged, got %d bytes", len(msg), len(got))
		}
	}
}
