/*
 * banned.h - functions apx code must not call (after git's banned.h): unbounded copies,
 * non-reentrant time and tokenizer calls, unchecked number parsing. Every .c file of apx
 * includes it after all its other headers (tests/lint-banned.sh checks that).
 */
#ifndef APX_BASE_BANNED_H
#define APX_BASE_BANNED_H

#define APX_BANNED(func) sorry_##func##_is_banned_in_apx

#undef strcpy
#define strcpy(x, y) APX_BANNED(strcpy)
#undef strcat
#define strcat(x, y) APX_BANNED(strcat)
#undef sprintf
#define sprintf(...) APX_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) APX_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) APX_BANNED(strtok)
#undef atoi
#define atoi(x) APX_BANNED(atoi)
#undef localtime
#define localtime(x) APX_BANNED(localtime)
#undef gmtime
#define gmtime(x) APX_BANNED(gmtime)

#endif
