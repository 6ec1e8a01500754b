/* tls_lib.c - a library with a large initial-exec TLS block (its
 * DT_FLAGS say STATIC_TLS), as librustc_driver has: under any LD_AUDIT
 * module the loader places it in the surplus of the static TLS block,
 * which by default holds 512 bytes (decision 124). */
__attribute__((tls_model("initial-exec"))) __thread char tls_buf[24 << 10];

int tls_sum(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		tls_buf[i % sizeof(tls_buf)] = (char)i;
	for (int i = 0; i < n; i++)
		s += tls_buf[i % sizeof(tls_buf)];
	return s;
}
