// placeholder: filled in by the service issue (9)
int main() { return 0; }
