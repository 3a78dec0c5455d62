package tokenizer

import "strings"

// GPT-2's byte-level alphabet (bytes_to_unicode of
// https://github.com/openai/gpt-2/blob/master/src/encoder.py, which Hugging
// Face's ByteLevel pre-tokenizer and decoder share): every byte stands for
// one printable character, so that a byte-level vocabulary holds no
// whitespace or control characters. The printable bytes '!'..'~',
// '¡'..'¬' and '®'..'ÿ' stand for themselves; the other 68 bytes, in
// increasing order, for U+0100, U+0101, ... (space is "Ġ" U+0120, newline
// "Ċ" U+010A).
var (
	byteRunes [256]rune     // byte -> its character
	runeBytes map[rune]byte // character -> its byte
	byteChars [256]string   // byte -> its character as a string
)

func init() {
	runeBytes = make(map[rune]byte, 256)
	next := rune(256)
	for b := range 256 {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE) {
			r = next
			next++
		}
		byteRunes[b] = r
		byteChars[b] = string(r)
		runeBytes[r] = byte(b)
	}
}

// toByteLevel spells the bytes of s in the byte-level alphabet.
func toByteLevel(s string) string {
	var b strings.Builder
	b.Grow(2 * len(s))
	for i := 0; i < len(s); i++ {
		b.WriteString(byteChars[s[i]])
	}
	return b.String()
}

// fromByteLevel returns the bytes a byte-level token stands for, and false
// when a character of it is outside the alphabet.
func fromByteLevel(token string) (string, bool) {
	out := make([]byte, 0, len(token))
	for _, r := range token {
		b, ok := runeBytes[r]
		if !ok {
			return "", false
		}
		out = append(out, b)
	}
	return string(out), true
}
