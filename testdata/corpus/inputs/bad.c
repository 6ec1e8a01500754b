int main() { int x = 1 +; return x; }
