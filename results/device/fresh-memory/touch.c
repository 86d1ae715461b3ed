#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
/* Maps MIB MiB of anonymous memory and writes one byte in each 4 KiB page, timed. */
int main(int c, char**v){ size_t n=(size_t)atol(v[1])<<20; struct timespec a,b;
 char*p=mmap(0,n,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
 clock_gettime(CLOCK_MONOTONIC,&a); for(size_t i=0;i<n;i+=4096)p[i]=1; clock_gettime(CLOCK_MONOTONIC,&b);
 printf("%zu MiB touched in %.3f s\n", n>>20, (b.tv_sec-a.tv_sec)+(b.tv_nsec-a.tv_nsec)/1e9); return 0;}
