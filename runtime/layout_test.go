package runtime

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// TestLayoutConstants checks the untyped constants code generators use
// against the structs they describe.
func TestLayoutConstants(t *testing.T) {
	var c Config
	var f Func
	var th Thread
	var fr Frame
	var rec Record
	var nd Node
	var m Metric
	var sm Sampler
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"ConfigSize", ConfigSize, unsafe.Sizeof(c)},
		{"FuncSize", FuncSize, unsafe.Sizeof(f)},
		{"FuncNumPathsOff", FuncNumPathsOff, unsafe.Offsetof(f.NumPaths)},
		{"FuncHashedOff", FuncHashedOff, unsafe.Offsetof(f.Hashed)},
		{"FuncFirstSiteOff", FuncFirstSiteOff, unsafe.Offsetof(f.FirstSite)},
		{"FuncNSitesOff", FuncNSitesOff, unsafe.Offsetof(f.NSites)},
		{"FuncSlotOff", FuncSlotOff, unsafe.Offsetof(f.Slot)},
		{"FuncPathRegOff", FuncPathRegOff, unsafe.Offsetof(f.PathReg)},
		{"FuncClosedOff", FuncClosedOff, unsafe.Offsetof(f.Closed)},
		{"MetricSize", MetricSize, unsafe.Sizeof(m)},
		{"SamplerSize", SamplerSize, unsafe.Sizeof(sm)},
		{"ThreadSize", ThreadSize, unsafe.Sizeof(th)},
		{"OffSelf", OffSelf, unsafe.Offsetof(th.Self)},
		{"OffR", OffR, unsafe.Offsetof(th.R)},
		{"OffOwner", OffOwner, unsafe.Offsetof(th.Owner)},
		{"OffSP", OffSP, unsafe.Offsetof(th.SP)},
		{"OffSPBase", OffSPBase, unsafe.Offsetof(th.SPBase)},
		{"OffSPLimit", OffSPLimit, unsafe.Offsetof(th.SPLimit)},
		{"OffTID", OffTID, unsafe.Offsetof(th.TID)},
		{"OffNext", OffNext, unsafe.Offsetof(th.Next)},
		{"OffOverflow", OffOverflow, unsafe.Offsetof(th.Overflow)},
		{"OffBusy", OffBusy, unsafe.Offsetof(th.Busy)},
		{"OffRecord", OffRecord, unsafe.Offsetof(th.Record)},
		{"OffCallSite", OffCallSite, unsafe.Offsetof(th.CallSite)},
		{"OffFlat", OffFlat, unsafe.Offsetof(th.Flat)},
		{"OffTailRec", OffTailRec, unsafe.Offsetof(th.TailRec)},
		{"OffCur", OffCur, unsafe.Offsetof(th.Cur)},
		{"OffLeafSite", OffLeafSite, unsafe.Offsetof(th.LeafSite)},
		{"OffLeafR", OffLeafR, unsafe.Offsetof(th.LeafR)},
		{"OffDarkList", OffDarkList, unsafe.Offsetof(th.DarkList)},
		{"OffDarkRec", OffDarkRec, unsafe.Offsetof(th.DarkRec)},
		{"OffDarkRSP", OffDarkRSP, unsafe.Offsetof(th.DarkRSP)},
		{"OffProc", OffProc, unsafe.Offsetof(th.Proc)},
		{"OffFlatMods", OffFlatMods, unsafe.Offsetof(th.FlatMods)},
		{"OffGate", OffGate, unsafe.Offsetof(th.Gate)},
		{"OffLatNext", OffLatNext, unsafe.Offsetof(th.LatNext)},
		{"OffLatLimit", OffLatLimit, unsafe.Offsetof(th.LatLimit)},
		{"OffLatDrop", OffLatDrop, unsafe.Offsetof(th.LatDropped)},
		{"FrameSavedCurOff", FrameSavedCurOff, unsafe.Offsetof(fr.SavedAcc)},
		{"FrameSavedRegOff", FrameSavedRegOff, unsafe.Offsetof(fr.SavedAcc) + 8},
		{"FrameExtSiteOff", FrameExtSiteOff, unsafe.Offsetof(fr.SavedAcc) + 16},
		{"FrameExtROff", FrameExtROff, unsafe.Offsetof(fr.SavedAcc) + 24},
		{"FrameSize", FrameSize, unsafe.Sizeof(fr)},
		{"RecordSize", RecordSize, unsafe.Sizeof(rec)},
		{"RecordFuncOff", RecordFuncOff, unsafe.Offsetof(rec.Func)},
		{"RecordDenseNOff", RecordDenseNOff, unsafe.Offsetof(rec.DenseN)},
		{"RecordHashOff", RecordHashOff, unsafe.Offsetof(rec.Hash)},
		{"RecordFirstSiteOff", RecordFirstSiteOff, unsafe.Offsetof(rec.FirstSite)},
		{"RecordNSitesOff", RecordNSitesOff, unsafe.Offsetof(rec.NSites)},
		{"RecordKidsOff", RecordKidsOff, unsafe.Offsetof(rec.Kids)},
		{"RecordColdOff", RecordColdOff, unsafe.Offsetof(rec.Cold)},
		{"NodeSize", NodeSize, unsafe.Sizeof(nd)},
		{"NodeFuncOff", NodeFuncOff, unsafe.Offsetof(nd.Func)},
		{"NodeRecOff", NodeRecOff, unsafe.Offsetof(nd.Rec)},
		{"NodeCountOff", NodeCountOff, unsafe.Offsetof(nd.Count)},
		{"NodeShortSize", NodeShortSize, unsafe.Offsetof(nd.Owner)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, the struct says %d", c.name, c.got, c.want)
		}
	}
	if got := binary.LittleEndian.Uint64([]byte("BLPPCFG1")); got != ConfigMagic {
		t.Errorf("ConfigMagic = %#x, \"BLPPCFG1\" is %#x", uint64(ConfigMagic), got)
	}
	// Every field is one 8-byte word (or an array of them), so C and Go
	// cannot disagree on padding; Record's narrower fields (decision
	// 146) sit at multiples of their sizes and fill their words, with no
	// gap between fields.
	for _, s := range layoutStructs {
		end := uintptr(0)
		for i := 0; i < s.typ.NumField(); i++ {
			fld := s.typ.Field(i)
			if fld.Tag.Get("c") == "" {
				t.Errorf("%s.%s has no c tag", s.typ.Name(), fld.Name)
			}
			narrow := s.typ == reflect.TypeOf(Record{}) && fld.Type.Size() < 8
			if fld.Offset != end {
				t.Errorf("%s.%s at %d, after a gap from %d", s.typ.Name(), fld.Name, fld.Offset, end)
			}
			end = fld.Offset + fld.Type.Size()
			if narrow {
				if fld.Offset%fld.Type.Size() != 0 {
					t.Errorf("%s.%s is not aligned to its size", s.typ.Name(), fld.Name)
				}
				continue
			}
			if fld.Offset%8 != 0 || fld.Type.Size()%8 != 0 {
				t.Errorf("%s.%s is not made of 8-byte words", s.typ.Name(), fld.Name)
			}
		}
		if end != s.typ.Size() || end%8 != 0 {
			t.Errorf("%s: fields end at %d, size %d", s.typ.Name(), end, s.typ.Size())
		}
	}
}

func TestPutConfigRoundTrip(t *testing.T) {
	c := Config{SelfVaddr: 1, OrigEntry: 2, OrigFini: 3, FuncsVaddr: 4, NFuncs: 5,
		BuildIDVaddr: 6, BuildIDLen: 7, DumpSignal: 8, Flags: 9}
	c.SlotsSize = 10
	c.MetricsVaddr, c.NMetrics, c.ArenaLimit = 13, 2, 14
	c.SitesVaddr, c.NSites = 11, 12
	b := make([]byte, ConfigSize)
	PutConfig(b, c)
	got, err := ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	c.Magic = ConfigMagic
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip: got %+v, want %+v", got, c)
	}
	if v := binary.LittleEndian.Uint64(b[unsafe.Offsetof(c.NFuncs):]); v != 5 {
		t.Errorf("nfuncs at its offset = %d", v)
	}
	var fb [FuncSize]byte
	PutFunc(fb[:], Func{NumPaths: 11, Hashed: 1, FirstSite: 12, NSites: 13, Slot: 14})
	if binary.LittleEndian.Uint64(fb[FuncNumPathsOff:]) != 11 || binary.LittleEndian.Uint64(fb[FuncFirstSiteOff:]) != 12 ||
		binary.LittleEndian.Uint64(fb[FuncNSitesOff:]) != 13 || binary.LittleEndian.Uint64(fb[FuncSlotOff:]) != 14 {
		t.Errorf("PutFunc: % x", fb)
	}
	if _, err := ParseConfig(b[:10]); err == nil {
		t.Error("ParseConfig accepted a short buffer")
	}
}

// TestPutSiteMetric checks the table entries the rewriter writes: every
// field at its offset, the metric's name NUL-padded and cut to 23 bytes.
func TestPutSiteMetric(t *testing.T) {
	var s Site
	sb := make([]byte, SiteSize)
	PutSite(sb, Site{Func: 1, Block: 2, Ret: 3})
	for _, f := range []struct {
		off  uintptr
		want uint64
	}{{unsafe.Offsetof(s.Func), 1}, {unsafe.Offsetof(s.Block), 2}, {unsafe.Offsetof(s.Ret), 3}} {
		if got := binary.LittleEndian.Uint64(sb[f.off:]); got != f.want {
			t.Errorf("PutSite: word at %d = %d, want %d", f.off, got, f.want)
		}
	}
	var m Metric
	mb := make([]byte, MetricSize)
	long := "abcdefghijklmnopqrstuvwxyz"
	PutMetric(mb, Metric{Type: 7, Config: 9, Name: MetricName(long)})
	if binary.LittleEndian.Uint64(mb[unsafe.Offsetof(m.Type):]) != 7 || binary.LittleEndian.Uint64(mb[unsafe.Offsetof(m.Config):]) != 9 {
		t.Errorf("PutMetric: % x", mb)
	}
	name := mb[unsafe.Offsetof(m.Name):]
	if want := append([]byte(long[:23]), 0); !bytes.Equal(name, want) {
		t.Errorf("PutMetric name: % x, want % x", name, want)
	}
	PutMetric(mb, Metric{Name: MetricName("tsc")})
	if want := append([]byte("tsc"), make([]byte, 21)...); !bytes.Equal(name, want) {
		t.Errorf("PutMetric short name: % x, want % x", name, want)
	}
}

func TestLayoutHeader(t *testing.T) {
	var b bytes.Buffer
	if err := WriteLayoutHeader(&b); err != nil {
		t.Fatal(err)
	}
	h := b.String()
	if !strings.HasPrefix(h, "/* Code generated by") || !strings.Contains(h, "DO NOT EDIT.") {
		t.Errorf("header does not start with the generated-code comment:\n%.200s", h)
	}
	for _, want := range []string{
		"#define BLPP_THREAD_OFF_R 8\n",
		"#define BLPP_FUNC_OFF_HASHED 8\n",
		"#define BLPP_CONFIG_OFF_SELF_VADDR 8\n",
		"_Static_assert(__builtin_offsetof(struct blpp_thread, owner) == BLPP_THREAD_OFF_OWNER",
		"\tunsigned long long mstart[4];\n",
		"\tlong long saved_r;\n",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("header lacks %q", want)
		}
	}
}
