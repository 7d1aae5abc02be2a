/*
 * The platform table: the one place winbuild lists the Packer builders it
 * emits, the cloudbase-init providers, and the Windows Server versions
 * (docs/architecture.md, "The platform table"). Every list, check and
 * default elsewhere reads it: the recipe schema's enums, the plan's
 * builder and provider checks, stage's provider confs, emit's template
 * pieces, plugins, secrets, base images, answer files and product keys.
 *
 * A new builder is one entry in platform_builders[] (builder/lib/platform.c)
 * plus its templates, packer/hcl/<name>.pkr.hcl.in and
 * packer/hcl/<name>.pkrvars.hcl.in, and its docs/packer.md section.
 * Data only: nothing here allocates, prints or keeps state.
 */
#ifndef WB_PLATFORM_H
#define WB_PLATFORM_H

#include <stddef.h>

enum platform_firmware {
	PLATFORM_FW_NONE,   /* starts from the cloud's own Windows image */
	PLATFORM_FW_BIOS,   /* installs from the ISO, MBR disk */
	PLATFORM_FW_UEFI,   /* installs from the ISO, GPT disk */
};

enum platform_transfer {
	PLATFORM_CD = 1,    /* the payload travels on a CD (`cd_files`) */
	PLATFORM_ARCHIVE,   /* one payload.zip, uploaded or pulled */
};

/* The image a cloud builder starts from, per Windows version. */
struct platform_base {
	const char *version;
	const char *core;       /* Server Core */
	const char *desktop;    /* Desktop Experience */
	/* the marketplace offer both are published under, where the platform
	 * has offers (azure-arm: the var-file's azure_image_offer); NULL: none */
	const char *offer;
	/* the windows.edition these images are (NULL: "datacenter") */
	const char *edition;
};

/* windows.edition of the Azure-only edition: no Windows Server ISO holds
 * it, so only a builder whose table lists an image of it can build it */
#define PLATFORM_EDITION_AZURE "datacenter-azure-edition"

#define PLATFORM_MAX_SECRETS 4
#define PLATFORM_MAX_VERSIONS 6
#define PLATFORM_MAX_WINPE 3

struct platform_builder {
	const char *name;           /* Packer builder type; its source is "<name>.node" */
	const char *provider;       /* the cloudbase-init provider `auto` picks */
	const char *providers;      /* "|a|b|": every provider whose metadata
				       service answers on this platform */
	enum platform_firmware fw;
	enum platform_transfer transfer;
	const char *sysprep;        /* packer/hcl/build-sysprep-<sysprep>.pkr.hcl.in */
	/* 1: the cloud sets the build VM's WinRM up itself, nothing winbuild
	 * opened is left to undo: no first-boot WinRM task (issue 40) */
	int cloud_winrm;
	const char *plugin;         /* required_plugins key */
	const char *plugin_source;
	const char *plugin_version; /* exact: docs/packer.md, "Plugins" */
	/* its sensitive variables: the only secrets `packer validate
	 * -only=<name>.node` needs (NULL-terminated) */
	const char *secrets[PLATFORM_MAX_SECRETS];
	/* the var-file variable naming its base image (NULL: none), and the
	 * value per Windows version and installation type */
	const char *base_var;
	struct platform_base base[PLATFORM_MAX_VERSIONS];
	/* more files the builder's source reads: packer/<file>.in is rendered
	 * to <file without its directory> beside the template */
	const char *files[2];
	/* ISO builders: the folders of its windowsPE folder in the tree
	 * (platform_winpe_dir()) that go on its CD when staged, each at the CD
	 * root under its name, and set "cd_<name lowercased, [a-z0-9_] kept>" for
	 * its template (NULL-terminated; [A-Za-z0-9._$-] only) */
	const char *winpe[PLATFORM_MAX_WINPE];
};

/* A product key: the edition it installs, and Microsoft's published KMS
 * client setup key (GVLK) for it. */
struct platform_gvlk {
	const char *edition;
	const char *key;
};

struct platform_windows {
	const char *version;        /* windows.version in a recipe */
	const char *build;          /* the OS build number */
	const char *image_prefix;   /* install.wim image names: "<prefix> SERVER<EDITION>[CORE]" */
	const char *pause_image;    /* node.pause_image when the recipe names none */
	struct platform_gvlk gvlk[2];
};

extern const struct platform_builder platform_builders[];
extern const size_t platform_nbuilders;
extern const struct platform_windows platform_windows[];
extern const size_t platform_nwindows;

/*
 * The system places a component may touch (recipe/winobj.c, issue 41): the
 * allow list beside what a component owns by its own names (docs/recipes.md,
 * "What a component may touch on Windows"). One entry is either
 *   - KEY: a machine registry key (below HKLM, '\'-separated, as a recipe
 *     writes it after "HKLM:\") that a component may write, with the keys
 *     below it; TAKE_OWNERSHIP, when set, the key above it whose owner the
 *     services step may take for the write (take_ownership:);
 *   - FILE: one file (tree path) in a system folder that a component may
 *     install or unpack (with `include` naming it).
 */
struct platform_winallow {
	const char *key;
	const char *take_ownership;
	const char *file;
	const char *why;
};

extern const struct platform_winallow platform_winallow[];
extern const size_t platform_nwinallow;

/* The names a recipe value may take, for the schema and messages. */
enum platform_set {
	PLATFORM_SET_BUILDERS = 1,  /* packer.builders[] */
	PLATFORM_SET_PROVIDERS,     /* cloudbase_init.provider (with "auto") */
	PLATFORM_SET_VERSIONS,      /* windows.version */
	PLATFORM_SET_EDITIONS,      /* windows.edition */
};

/* The I-th name of SET (from 0), or NULL past its end. */
const char *platform_set_item(enum platform_set set, size_t i);
/* 1 if NAME is in SET. */
int platform_set_has(enum platform_set set, const char *name);
/* SET's names joined by SEP into OUT (LEN bytes, always terminated). */
void platform_set_join(enum platform_set set, const char *sep, char *out, size_t len);

/* The entry of builder NAME / Windows VERSION, or NULL. */
const struct platform_builder *platform_builder(const char *name);
const struct platform_windows *platform_windows_find(const char *version);

/* 1 if builder NAME installs Windows from the ISO (needs
 * windows.iso_sha256, an answer file, a product key). */
int platform_builder_is_iso(const char *name);

/* The provider the image of builder B gets under cloudbase_init.provider
 * PROVIDER ("auto" picks B's own), or NULL if PROVIDER's metadata service
 * does not answer on B's platform. */
const char *platform_provider_for(const struct platform_builder *b, const char *provider);

/* The edition BASE's images are (its `edition`, or "datacenter"). */
const char *platform_base_edition(const struct platform_base *base);

/* B's base-image row for Windows VERSION and EDITION (windows.edition):
 * its Server Core and Desktop Experience images and marketplace offer;
 * NULL when the table has none (or B has no base images). */
const struct platform_base *platform_base_of(const struct platform_builder *b,
					     const char *version, const char *edition);

/* That row's Server Core or Desktop Experience image, or NULL. */
const char *platform_base_image(const struct platform_builder *b, const char *version,
				const char *edition, int desktop);

/*
 * The staged tree's folder for what Windows Setup on ISO builder B's CD
 * reads: "ProgramData/winbuild/winpe/<name>" ('/'-separated, relative to
 * the tree, as manifest tree paths are), into OUT (LEN bytes). Each folder
 * of B's `winpe` list in it goes on B's CD only, at the CD root under its
 * own name: PLATFORM_WINPE_DRIVERS, whose drivers Setup loads in
 * windowsPE, and any other the answer file looks for (docs/packer.md,
 * "Drivers in Setup"). Returns -1 (OUT empty) for a builder that installs no ISO
 * or a name too long for OUT.
 */
int platform_winpe_dir(const struct platform_builder *b, char *out, size_t len);
#define PLATFORM_WINPE_DRIVERS "$WinPEDriver$"

/* The GVLK of W's EDITION, or NULL. */
const char *platform_gvlk(const struct platform_windows *w, const char *edition);

#endif
