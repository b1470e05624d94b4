/* SPDX-License-Identifier: BSD-3-Clause */
/* A build tool, not part of the module: compiles the Lua script on stdin, as the per-host store
   would at each call, and writes its chunk (lua_dump) to stdout as a C string literal for a
   #define, so that the module loads the script compiled instead of compiling it each call.

   usage: luadump NAME < SCRIPT.lua
   NAME is the chunk's name, as the script's error messages give it ("=slot.lua").

   A chunk holds the sizes and byte order of the machine that made it; lscript.c compiles the
   source instead when the chunk does not load (a build for another machine). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

struct luadump_out {
	int column;
};

/* Each byte as itself where C reads it so, else as three octal digits, which no digit that
   follows can extend. */
static int luadump_write(lua_State *L, const void *p, size_t sz, void *ud)
{
	struct luadump_out *o = ud;
	const unsigned char *b = p;

	(void)L;
	for (size_t i = 0; i < sz; i++) {
		if (o->column == 0)
			fputs("\t\"", stdout);
		if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '\\' && b[i] != '"' && b[i] != '?') {
			putchar(b[i]);
			o->column++;
		} else {
			printf("\\%03o", b[i]);
			o->column += 4;
		}
		if (o->column >= 72) {
			fputs("\" \\\n", stdout);
			o->column = 0;
		}
	}
	return ferror(stdout) ? EIO : 0;
}

int main(int argc, char **argv)
{
	struct luadump_out o = { 0 };
	luaL_Buffer b;
	lua_State *L;
	int c;

	if (argc != 2) {
		fputs("usage: luadump NAME < SCRIPT.lua\n", stderr);
		return 2;
	}
	if ((L = luaL_newstate()) == NULL) {
		fputs("luadump: cannot make a Lua state\n", stderr);
		return 1;
	}
	luaL_buffinit(L, &b);
	while ((c = getchar()) != EOF)
		luaL_addchar(&b, (char)c);
	luaL_pushresult(&b);
	if (ferror(stdin) ||
	    luaL_loadbuffer(L, lua_tostring(L, -1), lua_objlen(L, -1), argv[1]) != 0) {
		fprintf(stderr, "luadump: %s\n", ferror(stdin) ? strerror(errno) : lua_tostring(L, -1));
		lua_close(L);
		return 1;
	}
	if (lua_dump(L, luadump_write, &o) != 0) {
		fputs("luadump: cannot write the chunk\n", stderr);
		lua_close(L);
		return 1;
	}
	fputs(o.column != 0 ? "\"\n" : "\t\"\"\n", stdout);
	lua_close(L);
	return fflush(stdout) == 0 ? 0 : 1;
}
