/*
 * Names and places on the Windows side that belong to Windows itself, and
 * that a component's declarations must never take over (issue 25, class 4;
 * the rules are in docs/recipes.md and docs/hardening.md):
 *   - service names: the generic services step (05-services.ps1) creates,
 *     reconfigures or deletes a service by name, so a component naming
 *     WinDefend or TermService would repoint Windows' own service;
 *   - system locations: a machine PATH entry or a Defender exclusion there
 *     would put Windows' (or every user's) files on the search path, or out
 *     of Defender's sight.
 */
#ifndef WB_WINRESERVED_H
#define WB_WINRESERVED_H

/* 1 if NAME is (case-insensitively, as the Service Control Manager
 * compares) the key name of a service Windows Server ships, else 0. */
int winreserved_service(const char *name);

/*
 * Whether tree path T ('/' separators, "" for C:\, as winpath_to_tree
 * gives it) is a system location: the drive root, one of the shared
 * top-level folders themselves (Program Files, Program Files (x86),
 * ProgramData), or at or below a folder Windows or its users own
 * (Windows, Users, ProgramData/Microsoft, ...). Case and 8.3 aliases are
 * Windows' (winpath_paths_clash). Returns NULL, or the location T is/lies in
 * (a static string, Windows spelling).
 */
const char *winreserved_location(const char *t);

/* 1 if inbound PORT is one of Windows' own remote management and file
 * sharing ports, which a component's firewall rule must not open: RPC's
 * endpoint mapper (135), NetBIOS session (139), SMB (445), RDP (3389),
 * WinRM over HTTP and HTTPS (5985, 5986). */
int winreserved_port(int port);

/* 1 if tree path T is DIR or lies below it (Windows' comparison: case,
 * 8.3 aliases), else 0. */
int winreserved_under(const char *t, const char *dir);

#endif
