package readonlytest

import "testing"

func TestWriterPathFindsWritersAndPassesReaders(t *testing.T) {
	CheckWriterPath(t)
}
