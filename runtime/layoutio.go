package runtime

// Encoding the structures layout.go defines into the images the rewriter
// writes, reading them back, and the C view of them (blpp_layout.h) that
// the runtime is compiled against.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// PutConfig encodes c into b (at least ConfigSize bytes, typically
// Image.Data[Image.Symbols[SymConfig]-Image.DataOff:]). A zero Magic is
// written as ConfigMagic. Note that DumpSignal 0 means no dump signal;
// start from Image.Config to keep the image's defaults.
func PutConfig(b []byte, c Config) {
	if c.Magic == 0 {
		c.Magic = ConfigMagic
	}
	putStruct(b[:ConfigSize], reflect.ValueOf(c))
}

// ParseConfig decodes a Config from b (at least ConfigSize bytes).
func ParseConfig(b []byte) (Config, error) {
	var c Config
	if len(b) < ConfigSize {
		return c, fmt.Errorf("config: %d bytes, want %d", len(b), ConfigSize)
	}
	getStruct(b, reflect.ValueOf(&c).Elem())
	return c, nil
}

// PutFunc encodes f into b (at least FuncSize bytes).
func PutFunc(b []byte, f Func) { putStruct(b[:FuncSize], reflect.ValueOf(f)) }

// PutSite encodes s into b (at least SiteSize bytes).
func PutSite(b []byte, s Site) { putStruct(b[:SiteSize], reflect.ValueOf(s)) }

// PutMetric encodes m into b (at least MetricSize bytes).
func PutMetric(b []byte, m Metric) { putStruct(b[:MetricSize], reflect.ValueOf(m)) }

// MetricName is name as Metric.Name holds it: its first 23 bytes,
// NUL-padded, so that the C string always ends.
func MetricName(name string) [3]uint64 {
	var raw [24]byte
	copy(raw[:23], name)
	var n [3]uint64
	for i := range n {
		n[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	return n
}

// putStruct writes the 8-byte fields of v in order, little-endian.
func putStruct(b []byte, v reflect.Value) {
	off := 0
	eachWord(v, func(w reflect.Value) {
		if w.Kind() == reflect.Int64 {
			binary.LittleEndian.PutUint64(b[off:], uint64(w.Int()))
		} else {
			binary.LittleEndian.PutUint64(b[off:], w.Uint())
		}
		off += 8
	})
}

func getStruct(b []byte, v reflect.Value) {
	off := 0
	eachWord(v, func(w reflect.Value) {
		x := binary.LittleEndian.Uint64(b[off:])
		if w.Kind() == reflect.Int64 {
			w.SetInt(int64(x))
		} else {
			w.SetUint(x)
		}
		off += 8
	})
}

// eachWord calls f for every 8-byte word of struct v, arrays flattened.
func eachWord(v reflect.Value, f func(reflect.Value)) {
	for i := 0; i < v.NumField(); i++ {
		fv := v.Field(i)
		if fv.Kind() == reflect.Array {
			for j := 0; j < fv.Len(); j++ {
				f(fv.Index(j))
			}
			continue
		}
		f(fv)
	}
}

// layoutStruct is a struct of blpp_layout.h: its C name, its Go type
// and what it is.
type layoutStruct struct {
	cname string
	typ   reflect.Type
	doc   string
}

// layoutStructs are the structs of blpp_layout.h, in header order (the
// live file's, live.go, follow).
var layoutStructs = []layoutStruct{
	{"blpp_config", reflect.TypeOf(Config{}), "runtime configuration, patched into the image by the rewriter"},
	{"blpp_func", reflect.TypeOf(Func{}), "one entry of the function table at funcs_vaddr"},
	{"blpp_thread", reflect.TypeOf(Thread{}), "per-thread block; %gs points at it"},
	{"blpp_frame", reflect.TypeOf(Frame{}), "shadow-stack entry"},
	{"blpp_site", reflect.TypeOf(Site{}), "one entry of the call-site table at sites_vaddr"},
	{"blpp_metric", reflect.TypeOf(Metric{}), "one entry of the metric table at metrics_vaddr"},
	{"blpp_sampler", reflect.TypeOf(Sampler{}), "what each thread samples, at sampler_vaddr (decision 92)"},
	{"blpp_record", reflect.TypeOf(Record{}), "a calling-context record"},
	{"blpp_node", reflect.TypeOf(Node{}), "a callee of a call site in a record's kids list"},
}

// layoutDefines are the constants of blpp_layout.h besides the offsets.
var layoutDefines = []struct{ name, value string }{
	{"BLPP_CONFIG_MAGIC", fmt.Sprintf("%#xull", uint64(ConfigMagic))},
	{"BLPP_CONFIG_FLAG_FLOW_ONLY", fmt.Sprintf("%dull", ConfigFlagFlowOnly)},
	{"BLPP_CONFIG_FLAG_NO_FATAL_HANDLERS", fmt.Sprintf("%dull", ConfigFlagNoFatalHandlers)},
	{"BLPP_DEFAULT_DUMP_SIGNAL", fmt.Sprint(DefaultDumpSignal)},
	{"BLPP_RED_ZONE", fmt.Sprint(RedZone)},
	{"BLPP_SLOTS_OFFSET", fmt.Sprint(SlotsOffset)},
	{"BLPP_BLOCK_UNKNOWN", fmt.Sprintf("%#xull", uint64(BlockUnknown))},
	{"BLPP_METRIC_TYPE_TSC", fmt.Sprintf("%#xull", uint64(MetricTypeTSC))},
	{"BLPP_MAX_METRICS", fmt.Sprint(MaxMetrics)},
	{"BLPP_DEFAULT_ARENA_LIMIT", fmt.Sprintf("%#xull", uint64(DefaultArenaLimit))},
	{"BLPP_DEFAULT_SHADOW_FRAMES", fmt.Sprintf("%#xull", uint64(DefaultShadowFrames))},
	{"BLPP_RECORD_INLINE_COUNTS", fmt.Sprint(RecordInlineCounts)},
	{"BLPP_RECORD_EXT_TWIN", fmt.Sprint(RecordExtTwin)},
	{"BLPP_RECORD_EXT_VIA", fmt.Sprint(RecordExtVia)},
	{"BLPP_RECORD_EXT_SLOT", fmt.Sprint(RecordExtSlot)},
	{"BLPP_HTAB_ENTRIES_OFF", fmt.Sprint(HTabEntriesOff)},
	{"BLPP_HTAB_BYTES_OFF", fmt.Sprint(HTabBytesOff)},
	{"BLPP_HTAB_LEFT_OFF", fmt.Sprint(HTabLeftOff)},
	{"BLPP_HTAB_INIT_CAP", fmt.Sprint(HTabInitCap)},
	{"BLPP_COLD_PATHS", fmt.Sprint(ColdPaths)},
	{"BLPP_PROMOTE_ENDS", fmt.Sprint(PromoteEnds)},
	{"BLPP_PROMOTE_BYTES", fmt.Sprint(PromoteBytes)},
	{"BLPP_HASH_MUL", fmt.Sprintf("%#xu", uint32(HashMul))},
	{"BLPP_NODE_SHORT_SIZE", fmt.Sprint(NodeShortSize)},
	{"BLPP_CONFIG_FLAG_CALL_CACHE", fmt.Sprintf("%dull", ConfigFlagCallCache)},
	{"BLPP_CONFIG_FLAG_FAULT_SHARED_THREADS", fmt.Sprintf("%dull", ConfigFlagFaultSharedThreads)},
	{"BLPP_CONFIG_FLAG_LIBRARY", fmt.Sprintf("%dull", ConfigFlagLibrary)},
	{"BLPP_CONFIG_FLAG_NO_LATENCY", fmt.Sprintf("%dull", ConfigFlagNoLatency)},
	{"BLPP_CONFIG_FLAG_EXIT_HOOK", fmt.Sprintf("%dull", ConfigFlagExitHook)},
	{"BLPP_LATENCY_SLOWEST", fmt.Sprint(LatencySlowest)},
	{"BLPP_LATENCY_BUCKETS", fmt.Sprint(LatencyBuckets)},
	{"BLPP_LATENCY_PENDING", fmt.Sprint(LatencyPending)},
	{"BLPP_LATENCY_HIST", fmt.Sprint(LatencyHist)},
	{"BLPP_LATENCY_WORDS", fmt.Sprint(LatencyWords)},
	{"BLPP_LATENCY_ENTRY_SIZE", fmt.Sprint(LatencyEntrySize)},
	{"BLPP_LATENCY_ENTRIES", fmt.Sprint(LatencyEntries)},
	{"BLPP_FID_BITS", fmt.Sprint(FidBits)},
	{"BLPP_FID_LOCAL_MASK", fmt.Sprintf("%#xull", uint64(FidLocalMask))},
	{"BLPP_MAX_MODULE_TAG", fmt.Sprint(MaxModuleTag)},
	{"BLPP_CALL_CACHE_BITS", fmt.Sprint(CallCacheBits)},
	{"BLPP_CALL_CACHE_OFFSET", fmt.Sprint(CallCacheOffset)},
	{"BLPP_CALL_CACHE_SIZE", fmt.Sprint(CallCacheSize)},
	{"BLPP_GATE_SHUT", fmt.Sprintf("%dull", GateShut)},
	{"BLPP_DEFAULT_SAMPLE_SIGNAL", fmt.Sprint(DefaultSampleSignal)},
	{"BLPP_FALLBACK_SAMPLE_PERIOD", fmt.Sprintf("%dull", FallbackSamplePeriod)},
	{"BLPP_SAMPLER_FLAG_TIMER", fmt.Sprintf("%dull", SamplerFlagTimer)},
	{"BLPP_LEAVE_EXECVE", fmt.Sprint(LeaveExecve)},
}

// WriteLayoutHeader writes blpp_layout.h, the C view of Config, Func,
// Thread and Frame, with an offset macro per field and _Static_asserts
// that the C compiler lays the structs out the same way. The header is
// usable from assembly (the struct definitions are hidden there).
func WriteLayoutHeader(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, `/* Code generated by blpp/runtime (WriteLayoutHeader); DO NOT EDIT. */

/*
 * Layout of the structures shared by the rewriter (which writes them) and
 * the runtime (which reads them). The Go structs in runtime/layout.go are
 * the definition; regenerate with `+"`go generate ./runtime`"+`.
 */

#ifndef BLPP_LAYOUT_H
#define BLPP_LAYOUT_H

`)
	for _, d := range append(layoutDefines, liveDefines...) {
		fmt.Fprintf(bw, "#define %s %s\n", d.name, d.value)
	}
	structs := append(append([]layoutStruct(nil), layoutStructs...), liveStructs...)
	for _, s := range structs {
		prefix := "BLPP_" + strings.ToUpper(strings.TrimPrefix(s.cname, "blpp_"))
		fmt.Fprintf(bw, "\n/* struct %s: %s */\n", s.cname, s.doc)
		fmt.Fprintf(bw, "#define %s_SIZE %d\n", prefix, s.typ.Size())
		for i := 0; i < s.typ.NumField(); i++ {
			f := s.typ.Field(i)
			fmt.Fprintf(bw, "#define %s_OFF_%s %d\n", prefix, strings.ToUpper(f.Tag.Get("c")), f.Offset)
		}
	}
	fmt.Fprint(bw, "\n#ifndef __ASSEMBLER__\n")
	for _, s := range structs {
		fmt.Fprintf(bw, "\nstruct %s {\n", s.cname)
		for i := 0; i < s.typ.NumField(); i++ {
			f := s.typ.Field(i)
			ctype, dim, err := cType(f.Type)
			if err != nil {
				return fmt.Errorf("layout header: %s.%s: %w", s.typ.Name(), f.Name, err)
			}
			fmt.Fprintf(bw, "\t%s %s%s;\n", ctype, f.Tag.Get("c"), dim)
		}
		fmt.Fprint(bw, "};\n")
	}
	fmt.Fprint(bw, "\n")
	for _, s := range structs {
		prefix := "BLPP_" + strings.ToUpper(strings.TrimPrefix(s.cname, "blpp_"))
		fmt.Fprintf(bw, "_Static_assert(sizeof(struct %s) == %s_SIZE, \"%s size\");\n", s.cname, prefix, s.cname)
		for i := 0; i < s.typ.NumField(); i++ {
			c := s.typ.Field(i).Tag.Get("c")
			fmt.Fprintf(bw, "_Static_assert(__builtin_offsetof(struct %s, %s) == %s_OFF_%s, \"%s.%s\");\n",
				s.cname, c, prefix, strings.ToUpper(c), s.cname, c)
		}
	}
	fmt.Fprint(bw, "#endif /* __ASSEMBLER__ */\n\n#endif /* BLPP_LAYOUT_H */\n")
	return bw.Flush()
}

// cType maps a field type to its C spelling and array suffix.
func cType(t reflect.Type) (string, string, error) {
	switch t.Kind() {
	case reflect.Uint64:
		return "unsigned long long", "", nil
	case reflect.Int64:
		return "long long", "", nil
	case reflect.Uint32:
		return "unsigned int", "", nil
	case reflect.Uint16:
		return "unsigned short", "", nil
	case reflect.Uint8:
		return "unsigned char", "", nil
	case reflect.Array:
		elem, _, err := cType(t.Elem())
		if err != nil || t.Elem().Kind() == reflect.Array {
			return "", "", fmt.Errorf("unsupported array type %v", t)
		}
		return elem, fmt.Sprintf("[%d]", t.Len()), nil
	}
	return "", "", fmt.Errorf("unsupported type %v", t)
}
