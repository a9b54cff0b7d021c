/* arenad.c - placeholder main until the daemon lands (see daemon/local.mk). */
int main(void) { return 0; }
