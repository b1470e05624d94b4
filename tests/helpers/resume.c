/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A conversation that asks to be resumed, then answers, and one that fails: what the module
 * does when it must ask for the user name (key=...%u...). Run by tests/suites/stack.sh under
 * pam_wrapper, against a service whose key uses %u.
 *
 *   resume SERVICE again|error
 *
 * again: the first pam_authenticate meets PAM_CONV_AGAIN at the user prompt and must return
 *        PAM_INCOMPLETE; the second is answered "alice" and must return PAM_SUCCESS.
 * error: the prompt fails (PAM_CONV_ERR) and pam_authenticate must fail.
 * Prints each call's result; exits 0 only if each was as expected.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <security/pam_appl.h>

struct script {
	int answer; /* what the next prompt gets: PAM_SUCCESS (with "alice"), or an error */
};

static int conv(int n, const struct pam_message **msg, struct pam_response **resp, void *data)
{
	struct script *sc = data;
	struct pam_response *r;

	for (int i = 0; i < n; i++) {
		if (msg[i]->msg_style == PAM_PROMPT_ECHO_ON && sc->answer != PAM_SUCCESS)
			return sc->answer;
	}
	if (n <= 0)
		return PAM_CONV_ERR;
	r = calloc((size_t)n, sizeof(*r));
	if (r == NULL)
		return PAM_BUF_ERR;
	for (int i = 0; i < n; i++) {
		if (msg[i]->msg_style == PAM_PROMPT_ECHO_ON)
			r[i].resp = strdup("alice");
	}
	*resp = r;
	return PAM_SUCCESS;
}

static bool expect(pam_handle_t *pamh, const char *what, int rc, int want)
{
	printf("%s: %s (%d), expected %s (%d)\n", what, pam_strerror(pamh, rc), rc,
	       pam_strerror(pamh, want), want);
	return rc == want;
}

int main(int argc, char **argv)
{
	struct script sc = { .answer = PAM_CONV_AGAIN };
	struct pam_conv pc = { conv, &sc };
	pam_handle_t *pamh = NULL;
	bool ok = true;
	int rc;

	if (argc != 3 || (strcmp(argv[2], "again") != 0 && strcmp(argv[2], "error") != 0)) {
		fprintf(stderr, "usage: resume SERVICE again|error\n");
		return 2;
	}
	if (pam_start(argv[1], NULL, &pc, &pamh) != PAM_SUCCESS) {
		fprintf(stderr, "pam_start failed\n");
		return 2;
	}
	if (strcmp(argv[2], "again") == 0) {
		ok &= expect(pamh, "prompt to resume", pam_authenticate(pamh, 0), PAM_INCOMPLETE);
		sc.answer = PAM_SUCCESS;
		ok &= expect(pamh, "resumed", pam_authenticate(pamh, 0), PAM_SUCCESS);
	} else {
		sc.answer = PAM_CONV_ERR;
		rc = pam_authenticate(pamh, 0);
		ok &= expect(pamh, "prompt failed", rc, PAM_CONV_ERR);
	}
	pam_end(pamh, PAM_SUCCESS);
	return ok ? 0 : 1;
}
