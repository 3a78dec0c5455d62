package openai

// JSONObjectPrefix reports whether s is a prefix of a JSON object as the
// json_object constraint reads it, and whether the object is closed.
func JSONObjectPrefix(s string) (prefix, closed bool) {
	var j jsonMode
	ok := j.feed(s)
	return ok, ok && j.mode == mDone
}
