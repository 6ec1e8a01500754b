void f(int a)
{
    int b[3];
    if (a)
        b[3] = a;
    char *p = 0;
    *p = 1;
}
