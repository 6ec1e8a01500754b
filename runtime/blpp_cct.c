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
 * the inline code reads is published last (dense_n, list words), and
 * lists change with signals blocked (sig_block), so a handler's entry on
 * the same thread never sees half a change.
 */


static struct blpp_record *R(u64 p) { return (struct blpp_record *)p; }
static struct blpp_node *N(u64 p) { return (struct blpp_node *)p; }

/* over_limit says whether the arena has reached its bound. */
static int over_limit(void) { return LOADR(&rt.arena_bytes) >= rt.arena_limit; }

/* slot_of says whether fid's counters live in t's slot counters: a
 * flow-only, frequency-only image with a slot for a dense fid, and t a
 * real block (the scratch block of early_gs has no slots). */
static int slot_of(struct blpp_thread *t, u64 fid)
{
	const struct blpp_func *f = func_of(fid);
	return f && rt.slots_size && t->sp_base > (u64)t + BLOCK_HDR && f->slot && !f->hashed &&
	       f->slot >= BLOCK_HDR && f->slot + 8 * (1 + f->num_paths) <= BLOCK_HDR + rt.slots_size;
}

/* cur_of is Thread.cur for a running activation with record r. */
static u64 cur_of(struct blpp_thread *t, const struct blpp_record *r)
{
	if (!r || !rt.slots_size || !instr(r->func) || !r->dense_n)
		return 0;
	return r->counts == (u64)t + func_of(r->func)->slot ? r->func + 1 : 0;
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
		arr = (u64 *)t->flat;
		if (!arr && alloc && rt.w && (arr = arena_alloc(&rt.w->arena, 8 * n)))
			t->flat = (u64)arr;
		return arr ? &arr[local_id(fid)] : 0;
	}
	mods = (u64 **)t->flat_mods;
	if (!mods && alloc && rt.w && (mods = arena_alloc(&rt.w->arena, 8 * (BLPP_MAX_MODULE_TAG + 1))))
		t->flat_mods = (u64)mods;
	if (!mods)
		return 0;
	arr = mods[tag];
	if (!arr && alloc && rt.w && (arr = arena_alloc(&rt.w->arena, 8 * n)))
		mods[tag] = arr;
	return arr ? &arr[local_id(fid)] : 0;
}

static struct blpp_record *flat_rec(struct blpp_thread *t, u64 fid)
{
	u64 *w = instr(fid) ? flat_word(t, fid, 0) : 0;
	return w ? R(*w) : 0;
}

/* closed says whether fid is a closed function (decision 57, blpp_partial.c);
 * calls_out, whether it is one that makes outside calls (decision 64). */
static int closed(u64 fid) { return instr(fid) && func_of(fid)->closed; }
static int calls_out(u64 fid) { return instr(fid) && func_of(fid)->closed == 2; }

/* running is the record of t's running activation: the newest frame's
 * function's when that is closed (its activations leave cur and record
 * alone), unless activations without frames run above it. */
static struct blpp_record *running(struct blpp_thread *t)
{
	u64 d = depth(t);
	if (d && !t->overflow && closed(frames(t)[d - 1].func))
		return flat_rec(t, frames(t)[d - 1].func);
	return lean(t->cur) ? flat_rec(t, t->cur - 1) : R(t->record);
}

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

/* rec_new makes a record of function fid under parent at call site id
 * site and links it at the end of t's list (so parents precede children). */
_Static_assert(BLPP_RECORD_INLINE_COUNTS >= sizeof(struct blpp_record), "inline counts overlap the record");

/* An uninstrumented function's record holds its calls and nothing else:
 * no paths, no call sites (decision 70). */
static const struct blpp_func dark_func;

static struct blpp_record *rec_new(struct blpp_thread *t, u64 fid, struct blpp_record *parent, u64 site)
{
	struct wiped *w = rt.w;
	const struct blpp_func *f = instr(fid) ? func_of(fid) : &dark_func;
	if (dark_fid(fid) && !func_of(fid)->num_paths && !func_of(fid)->nsites)
		f = func_of(fid); /* its slot, if any */
	u64 dense = f->hashed ? 0 : f->num_paths;
	struct blpp_record *r;
	u64 *counts;
	if (!w || over_limit() || dense > (1ul << 40))
		goto drop;
	/* Counters not in the slots follow the record at a fixed offset,
	 * BLPP_RECORD_INLINE_COUNTS, so the inline code reaches them without
	 * loading r->counts [decision 47]. */
	int slot = f != &dark_func && slot_of(t, fid);
	r = arena_alloc(&w->arena, BLPP_RECORD_INLINE_COUNTS + (slot ? 0 : 8 * (1 + dense * rt.stride)));
	if (!r)
		goto drop;
	if (slot)
		counts = (u64 *)((u8 *)t + f->slot); /* zero or this thread's own counts (a fork child's) */
	else
		counts = (u64 *)((u8 *)r + BLPP_RECORD_INLINE_COUNTS);
	if (f->hashed && !(r->hash = (u64)htab_new(w, HTAB_INIT)))
		goto drop;
	if (!rt.flow_only) {
		u64 *kids = arena_alloc(&w->arena, 8 * (f->nsites + 1));
		if (!kids)
			goto drop;
		r->kids = (u64)kids;
		r->first_site = f->first_site;
		r->nsites = f->nsites;
	}
	r->func = fid;
	r->counts = (u64)counts;
	r->parent = (u64)parent;
	r->site = site;
	r->index = t->nrecords;
	r->dense_n = dense; /* last: it tells the fast paths the record is ready */
	BARRIER();
	if (t->last_rec)
		STORE(&R(t->last_rec)->next, (u64)r);
	else
		STORE(&t->records, (u64)r);
	t->last_rec = (u64)r;
	STORE(&t->nrecords, t->nrecords + 1);
	live_sync(t); /* continuous mode: the file's part of t */
	return r;
drop:
	if (w)
		ADD(&w->stats[ST_DROPPED_RECORDS], 1);
	return 0;
}

/* root returns t's root record of fid, making it if needed. */
/*
 * Records are made with signals blocked. A signal handler that runs
 * instrumented code on this thread enters the same stubs; had it
 * interrupted the making of a record, it would find the thread's record
 * list or flat table half updated, or make a second record for the same
 * function and context (a profile the reader rejects). A record is made
 * once, so the two system calls are rare. Callers look again once
 * signals are blocked: a handler may have made the record meanwhile.
 */
static void sig_block(u64 *old)
{
	u64 all = ~0ul;
	sc4(SYS_rt_sigprocmask, 0 /* SIG_BLOCK */, &all, old, 8);
}

static void sig_restore(const u64 *old) { sc4(SYS_rt_sigprocmask, 2 /* SIG_SETMASK */, old, 0, 8); }

static struct blpp_record *root(struct blpp_thread *t, u64 fid)
{
	u64 *w = flat_word(t, fid, 0), old;
	struct blpp_record *r = 0;
	if (w && *w)
		return R(*w);
	sig_block(&old);
	w = flat_word(t, fid, 1);
	if (w && !(r = R(*w)) && (r = rec_new(t, fid, 0, 0)))
		*w = (u64)r;
	sig_restore(&old);
	return r;
}

/* find_node finds fid's node in the list at head, and the node before it. */
static struct blpp_node *find_node(struct blpp_node **head, u64 fid, struct blpp_node **prev)
{
	struct blpp_node *n;
	*prev = 0;
	for (n = *head; n && n->func != fid; *prev = n, n = N(n->next))
		;
	return n;
}

/* make_node adds fid's node, with calls, to the list at head of p (call
 * site site) and returns its record: a new one, or the ancestor it folds
 * onto. */
static struct blpp_record *make_node(struct blpp_thread *t, struct blpp_record *p, struct blpp_node **head, u64 site, u64 fid, u64 calls, u64 via)
{
	struct blpp_node *n;
	struct blpp_record *a;
	for (a = p; a && a->func != fid; a = R(a->parent))
		;
	n = rt.w ? arena_alloc(&rt.w->arena, sizeof(*n)) : 0;
	if (!n)
		return a;
	n->folded = a != 0; /* an ancestor (or p itself): the call folds onto it */
	if (!a) {
		if (!(a = rec_new(t, fid, p, site)))
			return 0;
		a->via = via;
	}
	n->via = via;
	n->func = fid;
	n->rec = (u64)a;
	n->owner = (u64)p;
	n->site = site;
	n->count = calls;
	if (n->folded) { /* listed once whole: the writer may read the list */
		n->fnext = t->folded;
		BARRIER();
		STORE(&t->folded, (u64)n);
		live_sync(t);
	}
	n->next = (u64)*head;
	*head = n;
	cache_fill(t, (u64)head, fid, n);
	return a;
}

/*
 * child returns the record of fid called from p at call site id site,
 * making it if needed, and adds calls to the node that leads there. A
 * call to a function that has a record on p's chain (p included) reuses
 * that ancestor (recursion folds: the tree stays finite); its node is
 * marked folded and listed for the writer. A site that is none or not one
 * of p's function (an entry from uninstrumented code) uses list 0.
 */
static u64 dark_via(struct blpp_thread *t, u64 list, u64 rsp); /* blpp_dark.c */

static struct blpp_record *child(struct blpp_thread *t, struct blpp_record *p, u64 site, u64 fid, u64 calls, u64 rsp)
{
	struct blpp_node **head, *n, *prev;
	struct blpp_record *a = 0;
	u64 idx = 0, old;
	if (!p->dense_n && !p->hash)
		return 0; /* not a record of this epoch */
	if (site >= p->first_site && site - p->first_site < p->nsites)
		idx = 1 + site - p->first_site;
	else
		site = 0;
	head = &((struct blpp_node **)p->kids)[idx];
	/* A list changes (a node made, or moved to the front, where the
	 * inline entry looks first) with signals blocked, see sig_block: a
	 * handler's entry never meets a half-moved node. */
	if (!(n = find_node(head, fid, &prev)) || prev) {
		sig_block(&old);
		if ((n = find_node(head, fid, &prev)) && prev) {
			prev->next = n->next;
			n->next = (u64)*head;
			*head = n;
		} else if (!n) {
			a = make_node(t, p, head, site, fid, calls, dark_via(t, (u64)head, rsp));
		}
		sig_restore(&old);
		if (!n)
			return a;
	}
	n->count += calls;
	cache_fill(t, (u64)head, fid, n);
	return R(n->rec);
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

/*
 * count adds one run of path `path` of record r (function fid) with the
 * metric deltas d [Ball-Larus 96 §3.3; DESIGN 8]. An activation without
 * its record (the shadow stack overflowed, the arena was full) counts in
 * the function's root record of the thread: its context is lost
 * (STATS no_record), its flow is not.
 */
static void count(struct blpp_thread *t, struct blpp_record *r, u64 fid, u64 path, const u64 *d)
{
	struct wiped *w = rt.w;
	u64 *v;
	if (!w)
		return;
	if (!instr(fid)) {
		ADD(&w->stats[ST_BAD_FUNCS], 1);
		return;
	}
	if (!r || r->func != fid || (!r->dense_n && !r->hash)) {
		ADD(&w->stats[ST_NO_RECORD], 1);
		if (!(r = root(t, fid)))
			return;
	}
	if (path >= func_of(fid)->num_paths) {
		ADD(&w->stats[ST_BAD_PATHS], 1);
		return;
	}
	if (path < r->dense_n)
		v = (u64 *)r->counts + 1 + path * rt.stride;
	else if (!(v = hash_slot(w, r, path))) {
		ADD(&w->stats[ST_DROPPED_COUNTS], 1);
		return;
	}
	ADD(&v[0], 1);
	for (u64 m = 0; m < rt.nmetrics; m++)
		ADD(&v[1 + m], d[m]);
}
