//go:build ignore

/*
 * blpp_cct.c: calling context trees [DESIGN 7; Ammons-Ball-Larus 97 §4].
 * Records (a function in a context: activation count, path counters) and
 * the node lists under each call site that lead to them; flat root
 * records (flow-only images, activations without a context); the call
 * cache the inline entries probe (decision 49); closed functions' and
 * slot counters' view of the running record (decisions 51, 57); finding
 * or making an entry's record; counting one path with its metric deltas.
 *
 * Part of the runtime's unity build (blpp_rt.c), after blpp_htab.c.
 * Records and nodes come from the arena and are never freed. Whatever
 * the inline code reads is published last (dense_n, list words), by one
 * store or CAS, so a signal handler's entry on the same thread never
 * sees half a change (decision 99: no signals are blocked).
 */


/* R is the record at p, or 0 for none (0 or zero_record: decision 104). */
static struct blpp_record *R(u64 p) { return p == (u64)&zero_record ? 0 : (struct blpp_record *)p; }
/* N is the node at p, or 0 at a list's end (0 or zero_node: decision 104). */
static struct blpp_node *N(u64 p) { return p == (u64)&zero_node ? 0 : (struct blpp_node *)p; }

/* canon is the record that r stands for in its thread's list (a hot
 * twin's cold record, else r); hot is where r's paths are counted (a
 * cold record's twin, else r). */
static inline __attribute__((always_inline)) struct blpp_record *canon(struct blpp_record *r)
{
	u64 tw;
	return r && r->dense_n && (tw = twin_of(r)) ? R(tw) : r;
}

static inline __attribute__((always_inline)) struct blpp_record *hot(struct blpp_record *r)
{
	u64 tw;
	return r && !r->dense_n && (tw = twin_of(r)) ? R(tw) : r;
}

/* over_limit says whether the arena has reached its bound. */
static int over_limit(void) { return LOADR(&rt.arena_bytes) >= rt.arena_limit; }

/* slot_of says whether fid's counters live in t's slot counters: a
 * flow-only, frequency-only image with a slot for a dense fid, and t a
 * real block (the scratch block of early_gs has no slots). */
static int slot_of(struct blpp_thread *t, const struct blpp_func *f)
{
	return f && rt.slots_size && t->sp_base > (u64)t + BLOCK_HDR && f->slot && !f->hashed &&
	       f->slot >= BLOCK_HDR && f->slot + 8 * (1 + f->num_paths) <= BLOCK_HDR + rt.slots_size;
}

/* cur_of is Thread.cur for a running activation with record r. */
static u64 cur_of(struct blpp_thread *t, const struct blpp_record *r)
{
	if (!r || !rt.slots_size || !instr(r->func) || !r->dense_n)
		return 0;
	return (u64)counts_of(r) == (u64)t + func_of(r->func)->slot ? r->func + 1 : 0;
}

/*
 * Flow-only records [decision 51]. In a flow-only image every activation
 * of fid counts in t's flat record of fid (root), so a record follows from
 * its function. The inline entry of a function with slot counters
 * therefore neither saves nor sets t->record, and its exit does not
 * restore it: while Thread.cur is not 0 the running record is the flat
 * record of fid cur - 1, and t->record is that of the newest activation
 * whose cur is 0 (such an activation's frame.record is never read). The
 * C code keeps to the same rule: lean says whether an activation with
 * cur leaves t->record alone.
 */
static int lean(u64 cur) { return rt.flow_only && cur != 0; }

/* flat_array returns the array of size bytes whose address the word at
 * p holds, made (published by CAS: a nested stub may make it meanwhile,
 * decision 99) when alloc says so; else 0. */
static u64 flat_array(u64 *p, u64 size, int alloc)
{
	u64 a = LOAD(p), n;
	if (a || !alloc || !rt.w || !(n = (u64)arena_alloc(&rt.w->arena, size)))
		return a;
	return CAS1(p, 0, n) ? n : LOAD(p); /* the loser's array stays unused */
}

/* flat_word is where t keeps its root record of fid: Thread.flat by local
 * id for the executable's functions, the module's array in Thread.flat_mods
 * for a shared object's (decision 81). With alloc, missing arrays are
 * made (in the arena: a fork child starts without them); else 0. */
static u64 *flat_word(struct blpp_thread *t, u64 fid, int alloc)
{
	struct mod *m = mod_of(fid);
	u64 tag = fid >> BLPP_FID_BITS, n, *arr, **mods;
	if (!m || local_id(fid) >= (n = m->nfuncs + m->ndark))
		return 0;
	if (tag == 0) {
		arr = (u64 *)flat_array((u64 *)&t->flat, 8 * n, alloc);
		return arr ? &arr[local_id(fid)] : 0;
	}
	if (!(mods = (u64 **)flat_array((u64 *)&t->flat_mods, 8 * (BLPP_MAX_MODULE_TAG + 1), alloc)))
		return 0;
	arr = (u64 *)flat_array((u64 *)&mods[tag], 8 * n, alloc);
	return arr ? &arr[local_id(fid)] : 0;
}

static struct blpp_record *flat_rec(struct blpp_thread *t, u64 fid)
{
	u64 *w = instr(fid) ? flat_word(t, fid, 0) : 0;
	return w ? R(*w) : 0;
}

/* closed says whether fid is a closed function (decision 57, blpp_partial.c);
 * calls_out, whether it is one that makes outside calls (decision 64). */
static int closed(u64 fid)
{
	const struct blpp_func *f = ifunc(fid);
	return f && f->closed;
}
static int calls_out(u64 fid)
{
	const struct blpp_func *f = ifunc(fid);
	return f && f->closed == 2;
}

/* running_for is the record of t's running activation: the newest
 * frame's function's when that is closed (its activations leave cur and
 * record alone), unless activations without frames run above it. The
 * caller, a stub of function fid whose entry is fn (ifunc), most often
 * fid's own newest frame, passes fn to spare a look-up; running knows
 * no function. */
static inline __attribute__((always_inline)) struct blpp_record *running_for(struct blpp_thread *t, u64 fid, const struct blpp_func *fn)
{
	u64 d = depth(t);
	if (d && !t->overflow) {
		u64 top = frames(t)[d - 1].func;
		if (top == fid ? fn && fn->closed : closed(top))
			return flat_rec(t, top);
	}
	return lean(t->cur) ? flat_rec(t, t->cur - 1) : canon(R(t->record));
}

static struct blpp_record *running(struct blpp_thread *t) { return running_for(t, ~0ul, 0); }

/* The call cache [decision 49]: entry {list, fid, node} says that the
 * node list whose head word is at list holds fid's node. Inline entries
 * look there when the list's first node is another function's. Nodes are
 * never freed (a fork child's cache is wiped with the arena), so an entry
 * stays true; a later pair with the same hash replaces it. */
struct cache_ent {
	u64 list, fid, node, pad;
};
_Static_assert(sizeof(struct cache_ent) * (1u << BLPP_CALL_CACHE_BITS) == BLPP_CALL_CACHE_SIZE, "call cache");
_Static_assert(BLPP_CALL_CACHE_OFFSET == BLPP_SLOTS_OFFSET, "the call cache takes the slots' place");

static void cache_fill(struct blpp_thread *t, u64 list, u64 fid, struct blpp_node *n)
{
	struct cache_ent *e;
	u32 h;
	if (!rt.cache_size || t->sp_base < (u64)t + BLPP_CALL_CACHE_OFFSET + BLPP_CALL_CACHE_SIZE)
		return; /* no cache in this block (early_gs's scratch block) */
	h = fib32(list + fid) >> (32 - BLPP_CALL_CACHE_BITS);
	e = (struct cache_ent *)((u8 *)t + BLPP_CALL_CACHE_OFFSET) + h;
	/* The list word last: an inline entry in a signal handler never
	 * pairs a new list with an old node (it takes the stub while this
	 * one runs anyway: Thread.busy). */
	STORE(&e->list, 0);
	BARRIER();
	e->fid = fid;
	e->node = (u64)n;
	BARRIER();
	STORE(&e->list, list);
}

/*
 * Making records and nodes without blocking signals [decision 99]. A
 * signal handler that runs instrumented code on this thread may enter a
 * stub while another is making or moving a record or node (a stub that
 * finds Thread.busy above 1 on entry is such a nested one: nested). It
 * must neither meet a half-made structure nor make a second record for
 * the same function and context (a profile the reader rejects). So:
 *  - everything is built whole before one store or CAS publishes it;
 *  - a node goes into its list by a CAS of the head word from the value
 *    seen when the list was searched: nodes are only ever added at the
 *    head, so an unchanged head means the list still lacks it, and a
 *    failed CAS means a nested stub added one: search again;
 *  - a record is published by its node (or its flat word) first and
 *    linked into the thread's list after (list_add); whichever stub
 *    meets it unlisted links it first, so parents precede children;
 *  - only a stub that is not nested moves a node to the front of its
 *    list, and while the node is out of the list TPRIV mv_node says
 *    where it is (find_node looks there);
 *  - only a stub that is not nested fills the call cache or gives a
 *    record its hot twin (promote).
 * A nested stub runs to its end before the one it interrupted goes on,
 * so each step above is atomic for the other.
 */
static int nested(const struct blpp_thread *t) { return LOADR(&t->busy) > 1; }

/* NEST_POINT marks each place where a signal handler's stub may land in
 * the middle of the above. The runtime's own tests build it with
 * BLPP_TEST_NEST, and their harness plays the handler there
 * (runtime/testdata/harness.c, mode nest): it enters function fid (0:
 * another) from the running record. */
#ifdef BLPP_TEST_NEST
void (*blpp_test_nest)(int where, u64 fid);
#define NEST_POINT(where, fid)                                                 \
	do {                                                                   \
		if (blpp_test_nest)                                            \
			blpp_test_nest(where, fid);                            \
	} while (0)
#else
#define NEST_POINT(where, fid) \
	do {                   \
	} while (0)
#endif

/* An uninstrumented function's record holds its calls and nothing else:
 * no paths, no call sites (decision 70). */
static const struct blpp_func dark_func;

_Static_assert(BLPP_RECORD_INLINE_COUNTS >= sizeof(struct blpp_record), "inline counts overlap the record");

/*
 * Cold records [decision 99]. In context mode most records of a large
 * function see a few of its paths a few times (python3 makes 56,000
 * contexts, 80% of which use one or two paths). A record of a hashed
 * function or of one with more than COLD_PATHS paths therefore starts
 * cold: DenseN 0, and a table of COLD_CAP entries at Hash, after its
 * calls word in the same allocation. The inline code then counts its
 * paths through the stub (a dense function's) or finds them in that
 * table (a hashed one's, decision 48). After promote_ends path ends
 * counted by the runtime the record is hot: a hashed one's next table
 * is HTAB_INIT entries or more (grown), a dense one gets a hot twin with
 * its dense array inline (promote), which the inline code reaches from
 * then on.
 */
enum { COLD_PATHS = BLPP_COLD_PATHS };

/*
 * kids_alloc makes the node lists of a record of a function with nsites
 * call sites: list 0 and one per site, each empty (a zero_node head),
 * after one word, Kids[-1], that heads the chain of folded nodes whose
 * record is this one (Node.RNext; 0 ends it). promote follows that chain
 * to the nodes that lead to a record it makes hot, instead of every
 * folded node of the thread: with deep recursion (clang, LLVM) that walk
 * made a run quadratic in its folded calls [decision 129]. A record that
 * folds a call onto itself has called, so its lists are its own, never
 * kids0's read-only zeros (whose word -1 is 0 too).
 */
static u64 *kids_alloc(u64 nsites)
{
	u64 *k = small_alloc(8 * (nsites + 2));
	if (!k)
		return 0;
	kids_fill(k + 1, nsites + 1);
	return k + 1;
}

/* fold_chain is the word that heads the chain of folded nodes onto the
 * record whose node lists are kids. */
static u64 *fold_chain(struct blpp_node **kids) { return (u64 *)kids - 1; }

/* kids0 returns the read-only empty lists (zero_node heads) that stand
 * for a record's node lists until it makes its first call (kids_of):
 * most records make none. A function with more call sites has its
 * lists from the start (rec_new). Filling the 4096 words once costs
 * some 16,000 instructions at the first record; the zeros they replace
 * cost none, and reached a million sites. */
enum { KIDS0_WORDS = 1 << 12 };
static u64 kids0(void)
{
	u64 z = LOAD(&rt.kids0);
	if (!z) {
		long r = sc6(SYS_mmap, 0, 8 * (1 + KIDS0_WORDS), PROT_RW, MAP_PRIVATE_ANON, -1, 0);
		if (failed(r))
			return 0;
		kids_fill((u64 *)r + 1, KIDS0_WORDS); /* [-1], the fold chain, stays 0 */
		sc3(SYS_mprotect, r, 8 * (1 + KIDS0_WORDS), 1 /* PROT_READ */);
		if (!CAS(&rt.kids0, 0, (u64)r + 8)) {
			sc2(SYS_munmap, r, 8 * (1 + KIDS0_WORDS));
			z = LOAD(&rt.kids0);
		} else {
			z = (u64)r + 8;
		}
	}
	return z;
}

/* anc_bit is function fid's bit in Record.anc: a Bloom filter of one
 * hash over the functions of a record's chain (decision 107). */
static u64 anc_bit(u64 fid) { return 1ul << (fib32(fid ^ (fid >> 32)) >> 26); }

/*
 * rec_new makes a record of function fid under parent at call site id
 * site, entered through via (0: none), whole but not yet in t's list
 * (list_add). Its counters follow it at a fixed offset,
 * BLPP_RECORD_INLINE_COUNTS, so that the inline code reaches them
 * without a pointer [decision 47] (or live in t's slots, whose address
 * is the word before it: counts_of); a cold record's table follows its
 * calls word.
 */
static struct blpp_record *rec_new(struct blpp_thread *t, u64 fid, struct blpp_record *parent, u64 site, u64 via)
{
	struct wiped *w = rt.w;
	const struct blpp_func *f = ifunc(fid), *df;
	if (!f && dark_fid(fid) && !(df = func_of(fid))->num_paths && !df->nsites)
		f = df; /* its slot, if any */
	else if (!f)
		f = &dark_func;
	int cold = !rt.flow_only && f != &dark_func && (f->hashed || f->num_paths > COLD_PATHS);
	u64 dense = f->hashed || cold ? 0 : f->num_paths, z = 0;
	struct blpp_record *r;
	if (!w || over_limit() || dense > (1ul << 40))
		goto drop;
	int slot = f != &dark_func && slot_of(t, f);
	u64 size = BLPP_RECORD_INLINE_COUNTS + (slot ? 0 : 8 * (1 + dense * rt.stride));
	/* The words before the record (decision 146): Twin for a dense
	 * function's cold record or the slot counters' address, and Via
	 * (first) for a callback. */
	int tw = cold && !f->hashed;
	u64 pre = 8 * (u64)(tw || slot) + (via ? 8 : 0);
	u8 *m = rt.flow_only ? arena_alloc(&w->arena, pre + size) : small_alloc(pre + size + (cold ? htab_bytes(COLD_CAP) : 0));
	if (!m)
		goto drop;
	r = (struct blpp_record *)(m + pre);
	if (__builtin_expect(tw || via || slot, 0)) {
		r->ext = (u8)((tw ? BLPP_RECORD_EXT_TWIN : 0) | (via ? BLPP_RECORD_EXT_VIA : 0) | (slot ? BLPP_RECORD_EXT_SLOT : 0));
		if (via)
			*(u64 *)m = via; /* before the Twin word, if any */
		if (slot) /* a flow-only root: never a Twin */
			*((u64 *)r - 1) = (u64)t + f->slot; /* zero or this thread's own counts (a fork child's) */
	}
	if (cold)
		r->hash = (u64)htab_at((u8 *)r + size, COLD_CAP);
	else if (f->hashed && !(r->hash = (u64)htab_new(w, HTAB_INIT)))
		goto drop;
	if (!rt.flow_only) {
		/* Node lists only when the record makes its first call
		 * (kids_of); until then it reads zeros. */
		u64 *kids = f->nsites + 1 <= KIDS0_WORDS ? (u64 *)(z = kids0()) : 0;
		if (!kids) {
			if (!(kids = kids_alloc(f->nsites)))
				goto drop;
		}
		r->kids = (u64)kids;
		r->first_site = f->first_site;
		r->nsites = f->nsites;
	}
	(void)z;
	r->func = fid;
	r->parent = (u64)parent;
	r->anc = (parent ? parent->anc : 0) | anc_bit(fid);
	r->site = (u32)site;
	r->dense_n = dense;
	return r;
drop:
	if (w)
		ADD(&w->stats[ST_DROPPED_RECORDS], 1);
	return 0;
}

/* list_add links r, whole and published, at the end of t's list, after
 * its parent, unless a stub got there first. Nested stubs may append
 * between any two steps: the end is found by walking from last_rec, and
 * every record passed is marked listed. */
static void list_add(struct blpp_thread *t, struct blpp_record *r)
{
	struct blpp_record *last, *p;
	u64 n, l;
	if (!r || LOAD(&r->listed))
		return;
	if ((p = R(r->parent)) && !LOAD(&p->listed))
		list_add(t, p);
	u64 via = via_of(r);
	if (via && !LOAD(&R(via)->listed))
		list_add(t, R(via));
	for (;;) {
		/* Read before the walk: see the CAS on the index below. */
		u32 was = LOAD(&r->index);
		/* The end: from last_rec, or the head while last_rec is not
		 * set yet (a stub linked the first record and was
		 * interrupted); every record passed is in the list. */
		if (!(last = R(LOAD(&t->last_rec))))
			last = R(LOAD(&t->records));
		for (; last; last = R(LOAD(&last->next))) {
			STORE(&last->listed, 1);
			if (last == r)
				return;
			if (!LOAD(&last->next))
				break;
		}
		if (LOAD(&r->listed))
			return;
		/* A nested stub that reaches r (its node is in a list
		 * already) may link it, with its own index, between the walk
		 * and here: a plain store would then put back an index the
		 * list has moved past, and the writer would name the wrong
		 * record as r's children's parent. The CAS fails then, and
		 * the next walk finds r. (An index never comes back: the
		 * list only grows, so a nested stub that gave r the index
		 * read into was gave it the one computed here.) Below 2^32:
		 * blpp_init bounds the arena. */
		NEST_POINT(7, r->func);
		if (!CAS1(&r->index, was, last ? last->index + 1 : 0))
			continue;
		BARRIER();
		if (CAS1(last ? &last->next : &t->records, 0, (u64)r))
			break;
	}
	NEST_POINT(3, 0);
	STORE(&r->listed, 1);
	while ((l = LOAD(&t->last_rec)) == 0 || R(l)->index < r->index)
		if (CAS1(&t->last_rec, l, (u64)r))
			break;
	while ((n = LOAD(&t->nrecords)) < (u64)r->index + 1)
		if (CAS1(&t->nrecords, n, (u64)r->index + 1))
			break;
	live_sync(t); /* continuous mode: the file's part of t */
}

/* root returns t's root record of fid (hot: where it counts), making it
 * if needed: published in the flat word by CAS, then listed. */
static struct blpp_record *root(struct blpp_thread *t, u64 fid)
{
	u64 *w = flat_word(t, fid, 1);
	struct blpp_record *r;
	if (!w)
		return 0;
	if (!(r = R(LOAD(w)))) {
		if (!(r = rec_new(t, fid, 0, 0, 0)))
			return 0;
		NEST_POINT(4, fid);
		if (!CAS1(w, 0, (u64)r))
			r = R(LOAD(w)); /* a nested stub made it: ours stays unused */
	}
	list_add(t, r);
	if (r->ext & BLPP_RECORD_EXT_SLOT) /* in t's slots */
		__atomic_fetch_or(counts_of(r), SLOT_LIVE, __ATOMIC_RELAXED);
	return hot(r);
}

/* kids_of returns p's node lists (its cold record's, which a hot twin
 * shares), made when alloc says so and p has only the zeros; 0 when
 * they cannot be made. */
static struct blpp_node **kids_of(struct blpp_record *p, int alloc)
{
	struct blpp_record *c = canon(p), *tw = R(twin_of(c));
	u64 k = LOAD(&c->kids), z = LOAD(&rt.kids0);
	if (k && k == z && alloc) {
		u64 *n = kids_alloc(c->nsites);
		if (!n)
			return 0;
		NEST_POINT(6, 0);
		if (CAS1(&c->kids, k, (u64)n))
			k = (u64)n;
		else
			k = LOAD(&c->kids); /* a nested stub made them: ours stay unused */
	}
	if (tw && LOAD(&tw->kids) != k)
		STORE(&tw->kids, k);
	return (struct blpp_node **)k;
}

/* find_node finds fid's node in the list at head, and the node before it
 * (0 when it is first, or out of the list being moved: not to move). */
static struct blpp_node *find_node(struct blpp_thread *t, struct blpp_node **head, u64 fid, struct blpp_node **prev)
{
	struct blpp_node *n;
	*prev = 0;
	for (n = N(LOAD((u64 *)head)); n && n->func != fid; *prev = n, n = N(LOAD(&n->next)))
		;
	if (!n && LOAD(&TPRIV(t)->mv_head) == (u64)head) {
		n = N(LOAD(&TPRIV(t)->mv_node));
		*prev = 0;
		if (n && n->func != fid)
			n = 0;
	}
	return n;
}

/* to_front moves n, found after prev, to the front of the list at head,
 * where the inline entry looks first. Not nested: TPRIV mv_node holds n
 * while it is out of the list. */
static void to_front(struct blpp_thread *t, struct blpp_node **head, struct blpp_node *prev, struct blpp_node *n)
{
	struct tpriv *tp = TPRIV(t);
	u64 h;
	STORE(&tp->mv_node, (u64)n);
	STORE(&tp->mv_head, (u64)head);
	BARRIER();
	STORE(&prev->next, n->next); /* nested stubs add only at the head: prev stays */
	NEST_POINT(2, n->func);
	do {
		h = LOAD((u64 *)head);
		STORE(&n->next, h);
	} while (!CAS1((u64 *)head, h, (u64)n));
	BARRIER();
	STORE(&tp->mv_head, 0);
}

/* folded_push lists folded node n for the writer. */
static void folded_push(struct blpp_thread *t, struct blpp_node *n)
{
	u64 h;
	do {
		h = LOAD(&t->folded);
		n->fnext = h;
	} while (!CAS1(&t->folded, h, (u64)n));
	live_sync(t);
}

/* make_node adds fid's node, with calls, to the list at head of p (call
 * site site), whose head word held h when it was searched, and returns
 * its record (hot): a new one, or the ancestor it folds onto; or a node
 * a nested stub added meanwhile. */
static struct blpp_record *make_node(struct blpp_thread *t, struct blpp_record *p, struct blpp_node **head, u64 h, u64 site, u64 fid, u64 calls, u64 via)
{
	struct blpp_node *n, *m, *prev;
	struct blpp_record *a, *r = 0;
	p = canon(p);
	/* Most calls reach a function no ancestor runs: Anc says so
	 * without a walk up the chain. */
	for (a = p->anc & anc_bit(fid) ? p : 0; a && a->func != fid; a = R(a->parent))
		;
	/* An ancestor (or p itself): the call folds onto it, and the node
	 * is listed for the writer, whole; any other has only the fields
	 * the inline entry and the lists read. */
	if (!(n = small_alloc(a ? sizeof(*n) : BLPP_NODE_SHORT_SIZE)))
		return hot(a);
	if (a) {
		n->folded = 1;
		n->via = via;
		n->owner = (u64)p;
		n->site = site;
	} else if (!(r = rec_new(t, fid, p, site, via))) {
		return 0;
	}
	n->func = fid;
	n->rec = (u64)(a ? hot(a) : r);
	n->count = calls;
	NEST_POINT(1, fid);
	for (;;) {
		STORE(&n->next, h);
		if (CAS1((u64 *)head, h, (u64)n))
			break;
		/* A nested stub added a node: perhaps this one's */
		h = LOAD((u64 *)head);
		if ((m = find_node(t, head, fid, &prev))) {
			ADD1(&m->count, calls);
			list_add(t, canon(R(m->rec)));
			return R(m->rec);
		}
	}
	list_add(t, r);
	if (a) {
		struct blpp_node **ak = kids_of(a, 1);
		folded_push(t, n);
		if (ak && (u64)ak != LOAD(&rt.kids0)) {
			u64 *c = fold_chain(ak), h2;
			do {
				h2 = LOAD(c);
				n->rnext = h2;
			} while (!CAS1(c, h2, (u64)n));
		}
	}
	if (!nested(t))
		cache_fill(t, (u64)head, fid, n);
	return R(n->rec);
}

/*
 * child returns the record of fid called from p at call site id site,
 * making it if needed, and adds calls to the node that leads there. A
 * call to a function that has a record on p's chain (p included) reuses
 * that ancestor (recursion folds: the tree stays finite); its node is
 * marked folded and listed for the writer. A site that is none or not one
 * of p's function (an entry from uninstrumented code) uses list 0. The
 * record returned is hot (where the activation counts).
 */
static u64 dark_via(struct blpp_thread *t, u64 list, u64 rsp); /* blpp_dark.c */

static struct blpp_record *child(struct blpp_thread *t, struct blpp_record *p, u64 site, u64 fid, u64 calls, u64 rsp)
{
	struct blpp_node **kids, **head, *n, *prev;
	u64 idx = 0, h;
	if (!p->dense_n && !p->hash)
		return 0; /* not a record of this epoch */
	if (site >= p->first_site && site - p->first_site < p->nsites)
		idx = 1 + site - p->first_site;
	else
		site = 0;
	if (!(kids = kids_of(p, 1)))
		return 0;
	head = &kids[idx];
	h = LOAD((u64 *)head);
	if (!(n = find_node(t, head, fid, &prev)))
		return make_node(t, p, head, h, site, fid, calls, dark_via(t, (u64)head, rsp));
	if (prev && !nested(t))
		to_front(t, head, prev, n);
	ADD1(&n->count, calls);
	list_add(t, canon(R(n->rec)));
	if (!nested(t))
		cache_fill(t, (u64)head, fid, n);
	return R(n->rec);
}

/*
 * promote gives cold record r of a dense function its hot twin [decision
 * 99]: the same header with the function's dense array inline, which
 * counts r's paths from now on (count). The inline code reaches the twin
 * where it looked for r: r's node, the folded nodes that lead to r, the
 * running record and the records the shadow frames saved. r keeps its
 * place in t's list and what it counted; the writer adds the twin's.
 */
static void promote(struct blpp_thread *t, struct blpp_record *r)
{
	const struct blpp_func *f = func_of(r->func);
	struct blpp_record *tw, *p = R(r->parent);
	struct blpp_frame *fr = frames(t);
	u64 dense = f->num_paths, d = depth(t);
	if (!rt.w || f->hashed || over_limit() || dense > (1ul << 40))
		return;
	u64 *tword = twin_word(r);
	if (!tword)
		return; /* never: a dense function's cold record has the word */
	/* The twin's own Twin word before it: 8 bytes into a 64-byte
	 * aligned block. */
	u8 *m = arena_alloc(&rt.w->arena, 8 + BLPP_RECORD_INLINE_COUNTS + 8 * (1 + dense * rt.stride));
	if (!m) {
		ADD(&rt.w->stats[ST_DROPPED_RECORDS], 1);
		return;
	}
	tw = (struct blpp_record *)(m + 8);
	tw->ext = BLPP_RECORD_EXT_TWIN;
	tw->func = r->func;
	tw->parent = r->parent;
	tw->anc = r->anc;
	tw->site = r->site;
	tw->first_site = r->first_site;
	tw->nsites = r->nsites;
	tw->kids = LOAD(&r->kids);
	tw->index = r->index;
	tw->listed = 1; /* in the list as r: nothing reads a twin's Via */
	*twin_word(tw) = (u64)r;
	tw->dense_n = dense;
	BARRIER();
	STORE(tword, (u64)tw);
	NEST_POINT(5, r->func);
	kids_of(r, 0); /* the twin has the lists r has now */
	if (p) {
		u64 idx = r->site && r->site >= p->first_site && r->site - p->first_site < p->nsites ? 1 + r->site - p->first_site : 0;
		struct blpp_node **kids = kids_of(p, 0);
		for (struct blpp_node *n = kids ? N(LOAD((u64 *)&kids[idx])) : 0; n; n = N(LOAD(&n->next)))
			if (n->rec == (u64)r)
				STORE(&n->rec, (u64)tw);
	}
	struct blpp_node **rk = kids_of(r, 0);
	if (rk && (u64)rk != LOAD(&rt.kids0))
		for (struct blpp_node *n = (struct blpp_node *)LOAD(fold_chain(rk)); n; n = (struct blpp_node *)LOAD(&n->rnext))
			if (n->rec == (u64)r)
				STORE(&n->rec, (u64)tw);
	for (u64 i = 0; i < d; i++)
		if (fr[i].record == (u64)r)
			fr[i].record = (u64)tw;
	if (t->record == (u64)r)
		t->record = (u64)tw;
	if (t->tail_rec == (u64)r)
		t->tail_rec = (u64)tw;
}

/* enter_record finds the record of an activation of fid entered at rsp. */
static struct blpp_record *enter_record(struct blpp_thread *t, u64 fid, u64 rsp)
{
	struct blpp_record *p = R(t->record);
	u64 site = t->call_site;
	if (t->tail_rec) {
		if (t->tail_rsp == rsp) {
			p = R(t->tail_rec);
			site = t->tail_site;
		}
		t->tail_rec = 0;
	}
	if (rt.flow_only || !p)
		return root(t, fid);
	return child(t, p, site, fid, 1, rsp);
}

/* lat_count counts one value in a path's latency word (blpp_latency.c). */
static void lat_count(struct blpp_thread *t, u64 *slot, u64 x);

/*
 * count_f adds one run of path `path` of record r (function fid, whose
 * entry is f: ifunc(fid), 0 when it is not instrumented) with the
 * metric deltas d [Ball-Larus 96 §3.3; DESIGN 8]. An activation without
 * its record (the shadow stack overflowed, the arena was full) counts in
 * the function's root record of the thread: its context is lost
 * (STATS no_record), its flow is not.
 */
static void count_f(struct blpp_thread *t, struct blpp_record *r, u64 fid, const struct blpp_func *f, u64 path, const u64 *d)
{
	struct wiped *w = rt.w;
	u64 *v;
	if (!w)
		return;
	if (!f) {
		ADD(&w->stats[ST_BAD_FUNCS], 1);
		return;
	}
	if (!r || r->func != fid || (!r->dense_n && !r->hash)) {
		ADD(&w->stats[ST_NO_RECORD], 1);
		if (!(r = root(t, fid)))
			return;
	}
	if (path >= f->num_paths) {
		ADD(&w->stats[ST_BAD_PATHS], 1);
		return;
	}
	r = hot(r);
	if (path < r->dense_n) {
		v = counts_of(r) + 1 + path * rt.stride;
	} else {
		/* r's function is f: its promote_ends, once (decision 145) */
		u64 ends = promote_ends(f);
		if (!(v = hash_slot(w, r, ends, path))) {
			ADD(&w->stats[ST_DROPPED_COUNTS], 1);
			return;
		}
		if (!rt.flow_only && ++r->cold >= ends && !f->hashed && !nested(t)) {
			/* A cold record gets hot: its twin counts from the next
			 * path end on (a hashed one's next table is larger:
			 * grown). */
			promote(t, r);
		}
	}
	ADD1(&v[0], 1);
	for (u64 m = 0; m < rt.nmetrics; m++)
		ADD1(&v[1 + m], d[m]);
	if (rt.latency)
		lat_count(t, &v[1 + rt.nmetrics], d[0]);
}

/* count is count_f of fid, its entry looked up (count_f: f is ifunc(fid)). */
static void count(struct blpp_thread *t, struct blpp_record *r, u64 fid, u64 path, const u64 *d)
{
	count_f(t, r, fid, ifunc(fid), path, d);
}
