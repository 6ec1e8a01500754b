package cct

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"os"
	"reflect"
	"slices"
	"testing"
)

// benchProfile returns the bytes of the profile named by
// BLPP_BENCH_PROFILE, and skips tb when the variable is unset: the big
// profiles these measure are not part of the repository.
func benchProfile(tb testing.TB) []byte {
	name := os.Getenv("BLPP_BENCH_PROFILE")
	if name == "" {
		tb.Skip("BLPP_BENCH_PROFILE names no profile")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkParseFile parses a real profile, read once into memory.
func BenchmarkParseFile(b *testing.B) {
	data := benchProfile(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseDigest logs a digest of everything Parse returns for the
// profile named by BLPP_BENCH_PROFILE, so that a change to the reader
// can be shown to give the same profile. The value digest covers every
// field, nil apart from empty, and map entries in key order; the
// capacity digest adds each slice's capacity (the reader cuts path and
// metric slices to their length, so that an append cannot run into the
// next record's).
func TestParseDigest(t *testing.T) {
	data := benchProfile(t)
	p, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	vals, caps := sha256.New(), sha256.New()
	w := digestWalker{vals: vals, caps: caps}
	w.walk(reflect.ValueOf(p))
	t.Logf("values %x", vals.Sum(nil))
	t.Logf("capacities %x", caps.Sum(nil))
}

// digestWalker feeds a value, field by field, to two hashes.
type digestWalker struct {
	vals, caps hash.Hash
	scratch    [8]byte
}

func (w *digestWalker) u64(h hash.Hash, x uint64) {
	binary.LittleEndian.PutUint64(w.scratch[:], x)
	h.Write(w.scratch[:])
}

func (w *digestWalker) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			w.u64(w.vals, 0)
			return
		}
		w.u64(w.vals, 1)
		w.walk(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			w.walk(v.Field(i))
		}
	case reflect.Slice:
		if v.IsNil() {
			w.u64(w.vals, 0)
			return
		}
		w.u64(w.vals, 1+uint64(v.Len()))
		w.u64(w.caps, uint64(v.Cap()))
		if v.Type().Elem().Kind() == reflect.Uint8 {
			w.vals.Write(v.Bytes())
			return
		}
		for i := range v.Len() {
			w.walk(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			w.u64(w.vals, 0)
			return
		}
		w.u64(w.vals, 1+uint64(v.Len()))
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return cmp.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
		})
		for _, k := range keys {
			w.walk(k)
			w.walk(v.MapIndex(k))
		}
	case reflect.String:
		w.u64(w.vals, uint64(v.Len()))
		w.vals.Write([]byte(v.String()))
	case reflect.Bool:
		if v.Bool() {
			w.u64(w.vals, 1)
		} else {
			w.u64(w.vals, 0)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.u64(w.vals, uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.u64(w.vals, v.Uint())
	default:
		panic(fmt.Sprintf("digest: kind %v of %v", v.Kind(), v.Type()))
	}
}
