/* high.h: the top module of the clean fixture. */
int high(void);
