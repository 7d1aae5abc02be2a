/*
 * The resolved plan: what every later stage consumes. Built by
 * plan_resolve() from an image recipe, its component files, override files,
 * $WINBUILD_SET and --set (recipe/resolve.c). Everything in it has been
 * validated: URLs have a scheme, digests are hex of the right length, keys
 * parsed, Windows destinations mapped to tree paths.
 *
 * Ownership: struct plan owns every string and array reachable from it;
 * plan_release() frees them all.
 *
 * @where the resolved plan every later stage consumes
 */
#ifndef WB_PLAN_H
#define WB_PLAN_H

#include <stddef.h>

#include "lib/err.h"
#include "lib/strlist.h"
#include "lib/extract_limits.h"
#include "lib/origin.h"
#include "trust/authenticode.h"
#include "trust/spec.h"

/*
 * packer.version when the recipe names none: Debian's Packer, the one the
 * shipped docs and the tests validate with (docs/packer.md, "Packer
 * versions"). Packer reads `packer { required_plugins }` from 1.7.0 on
 * (hashicorp/packer v1.7.0 hcl2template/parser.go, packerBlockSchema);
 * 1.6.6 rejects the block (the same file at v1.6.6 knows only
 * required_version).
 */
#define PLAN_PACKER_DEFAULT "1.6.6"
#define PLAN_PACKER_PLUGINS_MAJOR 1
#define PLAN_PACKER_PLUGINS_MINOR 7

enum plan_action {
	PLAN_UNPACK = 1,
	PLAN_INSTALL,
	PLAN_PAYLOAD,
};

struct plan_artifact {
	char *name;                /* unique in the plan */
	char *component;           /* component name */
	char *version;             /* component version */
	char *upstream_url;        /* the recipe's url (after replace) */
	char *filename;            /* last path segment of upstream_url */
	struct wb_strlist urls;    /* try order: mirrors first, then upstream
				      (absent when mirror_only) */
	int replaced;              /* a `replace` override supplied the url */
	char *credential;          /* `credential: NAME`: the entry of the
				    * credentials file its server needs (never
				    * the secret: fetch/creds.h), or NULL */
	struct wb_origin url_origin;

	struct trust_spec verify;   /* name and filename point at the above */
	/* `verify.<method>.since` (docs/recipes.md): a requirement only
	 * versions from VERSION on can meet; checked once the plan's versions
	 * are final */
	struct plan_since {
		const char *method;    /* the requirement's method name */
		char *version, *missing, *instead;
		struct wb_origin req_origin;
	} *since;
	size_t nsince, alloc_since;

	enum plan_action action;
	char *dest_win;            /* Windows path as written (normalised to '\') */
	char *dest_tree;           /* relative tree path ('/' separators) */
	struct wb_origin dest_origin;
	/* unpack */
	int strip;
	struct wb_strlist include;
	char *format;              /* "auto", "tar.gz", "tgz", "zip" */
	struct extract_limits limits;
	/* payload */
	char *payload_type;        /* "msi" or "exe" */
	struct wb_strlist payload_props;  /* "KEY=VALUE", sorted by key */
};

/*
 * `authenticode: {require, roots, publishers}` at the top level (every
 * component) or under `components.<n>` (that component). Policy only
 * tightens: SETS[0] is the merged top-level map's roots and publishers;
 * every layer's own top-level roots/publishers that differ, and a
 * component's own, are further trust sets after it, each of which must
 * hold too: a component can narrow the site's roots and publishers, never
 * replace them. A `require: true` in any layer holds. Applies to the staged
 * .exe, .dll and .msi files.
 * @where the `authenticode:` policy (global, per component; `require` and
 *   `signatures: all` only tighten) -- a list of ANDed trust sets
 */
struct plan_authenticode {
	int set;                       /* a policy applies (then nsets >= 1) */
	int require;                   /* unsigned files fail */
	struct trust_authset *sets;    /* ANDed (trust/spec.h) */
	size_t nsets, alloc_sets;
	struct wb_origin origin;       /* of the map (component's, else global) */
	struct wb_origin require_origin;
	int sigs_one, sigs_all;        /* some source says `signatures: one`,
					  `all`; one holds only without any
					  all (policy only tightens) */
};

/* Point OUT at A's settings (A must outlive OUT's use); release OUT with
 * plan_authenticode_policy_release. */
void plan_authenticode_policy(const struct plan_authenticode *a,
			      struct authenticode_policy *out);
void plan_authenticode_policy_release(struct authenticode_policy *out);
void plan_authenticode_release(struct plan_authenticode *a);

/*
 * `site_signing:` (docs/authenticode.md, "Site signing"): the site's own
 * Authenticode signature replaces the upstream one on every staged .exe,
 * .dll and .msi of COMPONENTS whose file name matches one of FILES (shell
 * patterns, case-insensitive; none: all three kinds), after the upstream
 * verification. ROOTS (relative to the declaring file) and PUBLISHERS are
 * what the signed files must verify against, at stage and in `verify`.
 */
struct plan_sitesign {
	int set;
	struct wb_strlist components;
	struct wb_strlist files;
	char *roots;
	struct wb_strlist publishers;
	struct wb_origin origin;       /* of the map */
};

/* 1 when S selects the staged file at tree path PATH of COMPONENT. */
int plan_sitesign_selects(const struct plan_sitesign *s, const char *component,
			  const char *path);

struct plan_firewall {
	char *name;
	int port;
	char *protocol;
};

/* A machine registry value a component sets (`registry:`): KEY is
 * HKLM:\..., NAME a value name or "(default)" (the key's default value,
 * string only), TYPE "string", "expand_string", "dword" (VALUE then a
 * decimal 0-4294967295) or "binary" (VALUE lower-case hex bytes, no
 * separators). TAKE_OWNERSHIP, or NULL: KEY or an ancestor of it that
 * Administrators may not write (TrustedInstaller's), whose owner and
 * access 05-services.ps1 takes for the write and restores after it.
 * 05-services.ps1 writes it. */
struct plan_registry {
	char *key, *name, *type, *value;
	char *take_ownership;
};

/*
 * A Windows service a component declares (`services:`, docs/recipes.md).
 * 05-services.ps1 registers every one, in DEPENDS_ON order, with MANAGER:
 * "sc" (sc.exe; the program, or LOG_RUNNER running it, answers the service
 * manager) or "nssm". KUBEADM_FLAGS: the service runs powershell.exe -File
 * WRAPPER, which stage renders from kubelet/StartKubelet.ps1 and which reads
 * kubeadm-flags.env at every start. Paths are Windows paths inside the
 * tree; every argument passed the ps_binpath sink (lib/tmpl.c).
 */
struct plan_service {
	char *name;
	char *component;
	char *binary;
	struct wb_strlist args;        /* under every manager */
	struct wb_strlist sc_args;     /* before ARGS, under sc only */
	struct wb_strlist depends_on;  /* service names, each declared */
	char *manager;                 /* "sc" or "nssm" (node: resolved) */
	char *log_runner;              /* or NULL */
	char *log_file;                /* or NULL */
	struct wb_strlist log_runner_args; /* LOG_RUNNER's own flags after --log-file */
	int kubeadm_flags;
	char *wrapper;                 /* Windows path, when kubeadm_flags */
	struct wb_origin origin, binary_origin, manager_origin;
	struct wb_origin *dep_origins; /* one per depends_on entry */
};

/* A file a component declares (`generate:`): TEMPLATE (a path, resolved
 * relative to the component file) rendered with VARS ("k=v", ${}
 * expanded) to DEST_WIN by stage (stage/generate.c). */
struct plan_generate {
	char *component;
	char *template_path;
	char *dest_win, *dest_tree;
	struct wb_strlist vars;
	struct wb_origin origin;
};

struct plan_component {
	char *name;
	char *version;
	char *file;                /* component file path */
	char *description, *homepage, *license, *purl;
	struct wb_strlist path;            /* Windows paths for PATH */
	struct wb_strlist directories;     /* Windows paths to create */
	struct wb_origin *directory_origins; /* one per directory */
	struct wb_strlist defender_exclusions;
	struct wb_strlist admin_directories; /* created writable by SYSTEM and Administrators only */
	struct wb_strlist event_manifests;   /* Windows paths of staged .man files: wevtutil im */
	struct plan_firewall *firewall;
	size_t nfirewall;
	struct plan_registry *registry;
	size_t nregistry;
	struct plan_authenticode authenticode;  /* effective for this component */
	struct wb_origin version_origin;
};

/* images.<key>: a container image pre-pulled into the image (issue 33;
 * recipe/images.c). */
struct plan_image {
	char *key;                 /* images.<key>, sorted by it */
	char *name;                /* HOST/REPO, the registry in full */
	char *tag;                 /* or NULL */
	char *digest;              /* "sha256:<hex>", or NULL (needs_pin) */
	char *needs_pin;           /* why it is not pinned yet, or NULL */
	int allow_foreign_layers;
	char *layout;              /* images.<key>.layout: an OCI image layout
				    * (a directory or .tar) as its source
				    * (fetch/imgsource.h), or NULL: its
				    * registry */
	struct wb_origin origin;   /* the entry's key */
	/* images.<key>.cosign, or the registry.k8s.io default: the signature
	 * the pin must carry (fetch/registry.h, trust/ocisig.h); all NULL when
	 * none is required */
	struct plan_image_cosign {
		char *identity, *issuer;   /* keyless */
		char *key;                 /* or a PEM public key file (a path) */
		char *trusted_root;        /* a path; NULL: the shipped one
					    * (recipes/trust/sigstore/) */
		int defaulted;             /* its registry's default signer */
		struct wb_origin origin;
		/* DEFAULTED: the signer's entry in
		 * recipes/trust/image-signers.yaml, and its registry prefix
		 * ("registry.k8s.io/") */
		struct wb_origin default_origin;
		char *default_registry;
	} cosign;
};

struct plan_mirror {
	char *from, *to;
	struct wb_origin origin;
};

struct plan {
	char *name;
	char *recipe_path;
	char *windows_version;
	char *windows_edition;     /* "standard" or "datacenter" */
	int windows_desktop;       /* windows.desktop_experience */
	char *windows_locale;      /* windows.locale, e.g. "en-US" */
	/* windows.product_key for the ISO builders' answer file: "gvlk" (the
	 * edition's KMS client key, lib/platform.c), "none" (evaluation
	 * media), "env" (GVLK for Setup, then PKR_VAR_windows_product_key) */
	char *windows_product_key;
	/* windows.iso_sha256: the install ISO's digest, lowercase hex; NULL
	 * when no ISO builder is asked for, or when it is "none" (or missing)
	 * and policy.unverified_iso: allow (then iso_unverified is 1) */
	char *windows_iso_sha256;
	int iso_unverified;
	struct wb_origin windows_iso_origin;
	/* an ISO builder is selected and the ISO is neither pinned nor allowed
	 * unverified: plan only warns, emit and build refuse with
	 * plan_require_iso() (1: not pinned, 2: iso_sha256: none); the origin
	 * is where the value is written (or the windows: map) */
	int iso_missing;
	struct wb_origin iso_missing_origin;
	char *cloudbase_provider;
	char *service_manager;     /* "sc" or "nssm" */
	char *pause_image;
	char *cni;                 /* "none" or "nat" */
	/* The CNI plugin and configuration directories as tree paths
	 * ("opt/cni/bin"), from the enabled components' `cni:` maps, which
	 * must agree (containerd's config names them, the CNI components
	 * unpack there); NULL when no enabled component declares them. Each
	 * origin is where the first component to declare it says so. */
	char *cni_bin_dir, *cni_conf_dir;
	struct wb_origin cni_bin_dir_origin, cni_conf_dir_origin;
	struct wb_strlist windows_features;
	struct wb_strlist builders;
	/* the cloudbase-init provider each of BUILDERS' images gets (same
	 * order), from cloudbase_init.provider through the platform table:
	 * resolve refuses one that contradicts a builder */
	struct wb_strlist builder_providers;
	/* packer.payload: pull — the cloud builders' VM fetches payload.zip
	 * from PAYLOAD_URL (the user's storage) instead of a WinRM upload */
	int payload_pull;
	char *payload_url;
	/* packer.version: the Packer the template is for (default
	 * PLAN_PACKER_DEFAULT); PACKER_PLUGINS when it reads
	 * `packer { required_plugins }` (>= 1.7.0): emit pins the plugins in
	 * the template itself */
	char *packer_version;
	int packer_plugins;
	struct wb_strlist override_files;

	struct trust_policy policy;
	struct plan_authenticode authenticode;  /* the global `authenticode:` */
	struct plan_sitesign site_signing;      /* `site_signing:` */
	struct plan_mirror *mirrors;
	size_t nmirrors;
	int mirror_only;
	struct wb_origin mirror_only_origin;

	struct plan_component *components;
	size_t ncomponents, alloc_components;
	struct plan_artifact *artifacts;   /* sorted by name */
	size_t nartifacts, alloc_artifacts;
	/* every enabled component's services, dependencies first, and the
	 * files they declare */
	struct plan_service *services;
	size_t nservices, alloc_services;
	struct plan_generate *generate;
	size_t ngenerate, alloc_generate;
	struct plan_image *images;         /* images:, sorted by key */
	size_t nimages;
	/* windows.updates (recipe/updates.c, docs/updates.md), in install
	 * order: checkpoints first, then the rest, each in the recipe's
	 * order. Each is an artifact of the synthetic component
	 * PLAN_UPDATES_COMPONENT named by ARTIFACT. */
	struct plan_update {
		char *kb;                  /* "KB5034439" */
		char *artifact;            /* "kb5034439" */
		char *dest_win;            /* C:\ProgramData\winbuild\updates\NN-kb....msu */
		int checkpoint;
		int must_apply;            /* already installed / not applicable fail */
		char *expect_build;        /* "26100.2894" (the last entry only), or NULL */
		struct wb_origin origin;
	} *updates;
	size_t nupdates;

	/* Every resolved scalar as "dotted.key", value and origin, sorted by
	 * key: what `plan --explain` prints beyond the artifacts. */
	struct plan_value {
		char *key;
		char *value;
		struct wb_origin origin;
	} *values;
	size_t nvalues, alloc_values;

	/* Values that cannot be derived and look inconsistent (crictl off
	 * Kubernetes' minor, a containerd the node config or Kubernetes does
	 * not fit): warned about by the CLI, listed by `plan --json`. ORIGIN
	 * is the value to look at. */
	struct plan_warning {
		char *msg;
		struct wb_origin origin;
	} *warnings;
	size_t nwarnings, alloc_warnings;

	struct wb_strlist interned;  /* file names that origins point to */
};

struct plan_inputs {
	const char *recipe;              /* image recipe path */
	const char *const *overrides;    /* override file paths, in order */
	size_t noverrides;
	const char *env_set;             /* $WINBUILD_SET or NULL */
	const char *const *sets;         /* --set key=value, in order */
	size_t nsets;
	const char *const *builders;     /* --builder NAME: narrows packer.builders */
	size_t nbuilders;
	/* NULL, or the shipped data (cmd_data_dir): its
	 * recipes/trust/image-signers.yaml gives an image without a signer
	 * its registry's default (recipe/images.c) */
	const char *data_dir;
};

/*
 * Resolve IN into PLAN. Errors are WB_EUSAGE with "file:line:col: message"
 * (or WB_EIO when a file cannot be read). On error PLAN is released.
 * @where the resolver: which file of `builder/recipe/` does what -- the
 *   driver; the list of files heads `builder/recipe/resolve_int.h`;
 *   docs/architecture.md "Resolution"
 */
int plan_resolve(const struct plan_inputs *in, struct plan *plan,
		 struct wb_err *e);
void plan_release(struct plan *plan);
/* Free PLAN's images (recipe/images.c). */
void plan_images_release(struct plan *plan);
/* The component windows.updates' artifacts belong to, and free them
 * (recipe/updates.c). */
#define PLAN_UPDATES_COMPONENT "windows-updates"
void plan_updates_release(struct plan *plan);

/* "unpack", "install" or "payload" (plan --json, manifest.json). */
const char *plan_action_name(enum plan_action a);

/* The ISO builders' requirement, checked where the ISO is used (emit,
 * build): -1 and a "file:line:col: ..." WB_EUSAGE error naming what to set
 * when plan->iso_missing, else 0. */
int plan_require_iso(const struct plan *plan, struct wb_err *e);

const struct plan_artifact *plan_find_artifact(const struct plan *plan,
					       const char *name);
const struct plan_component *plan_find_component(const struct plan *plan,
						 const char *name);
void plan_service_release(struct plan_service *s);
const struct plan_service *plan_find_service(const struct plan *plan,
					     const char *name);

#endif
