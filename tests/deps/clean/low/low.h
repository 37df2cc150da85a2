/* low.h: the bottom module of the clean fixture. */
int low(void);
