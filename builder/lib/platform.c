/* The platform table (see lib/platform.h). Sources per value are named
 * beside it; docs/packer.md has the per-builder story. */
#include <stdio.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/platform.h"

/*
 * Per builder. Versions of the plugins: exact, each the newest release tag
 * whose source could be read here, re-read for issue 43 (2026-12-07): its
 * tag, date and commit beside it; tests/packer/plugin-attrs.json holds the
 * attributes of its *.hcl2spec.go, regenerated from those tags unchanged.
 * Newer releases are announced (vsphere v2.5.0, vmware/packer-plugin-vsphere
 * PR #840, 2026-08-25; qemu v1.1.5, hashicorp/packer-plugin-qemu PR #244,
 * 2026-06-17) but their tags were not in the sources readable here, so
 * their attribute sets are unchecked and the pins stay (docs/packer.md,
 * "Plugins", says how to move them). The pins hold at build time when the
 * template is emitted for Packer >= 1.7 (packer.version; emit/packer.c). vSphere: the plugin moved from hashicorp/ to
 * vmware/ (its go.mod names github.com/vmware/packer-plugin-vsphere from
 * v1.4.x on; vmware/packer-plugin-vsphere#585), and `packer init` resolves
 * a source by its GitHub path, so the old hashicorp/ path would fetch a
 * release line that no longer moves.
 *
 * Base images: Azure's MicrosoftWindowsServer publisher, generation 2 SKUs
 * (Server Core "-core-g2" or Desktop Experience) under the offer of each
 * version (below); Amazon's own Windows AMIs
 * ("...-English-Core-Base-*" or "...-Full-Base-*", image-builder
 * packer/ami/windows-*.json). vSphere's per-version value is its guest OS
 * identifier (image-builder packer/ova/windows-*.json).
 * @where the platform table: every Packer builder, cloudbase-init provider
 *   and Windows Server version -- each builder: provider, firmware, transfer,
 *   sysprep path, plugin and pinned version, secrets, base images
 */
const struct platform_builder platform_builders[] = {
	{
		.name = "azure-arm", .provider = "azure", .providers = "|azure|",
		.fw = PLATFORM_FW_NONE, .transfer = PLATFORM_ARCHIVE, .sysprep = "azure",
		/* Packer's azure-arm builder gives the VM its WinRM listener
		 * through Azure: the deployment template's Windows profile with
		 * a Key Vault certificate (packer-plugin-azure
		 * builder/azure/arm/template_factory.go, GetVirtualMachineDeployment:
		 * BuildWindows(..., tmpWinRMCertificateUrl), commit 002965f6),
		 * not through a script in the VM */
		.cloud_winrm = 1,
		.plugin = "azure", .plugin_source = "github.com/hashicorp/azure",
		.plugin_version = "2.6.3",   /* v2.6.3, 2026-07-15, 7f7e7b4a */
		.secrets = { "azure_client_secret" },
		.base_var = "azure_image_sku",
		/* The offer per version (issue 43, read 2026-12-07): 2022 moved
		 * to the "windowsserver2022" offer, whose SKUs are the old
		 * offer's (the old offer's 2022 images are deprecated from
		 * 2026-06-09): kubernetes-sigs/image-builder d380641ae
		 * (2026-06-05), images/capi/packer/azure/windows-2022-containerd.json
		 * and windows-2022-containerd-cvm.json (2022-datacenter-g2 under
		 * the new offer). 2019 and 2025 stay on "WindowsServer" (the
		 * same repository's windows-2019-containerd.json and
		 * windows-2025-containerd.json at ae63061ef). */
		.base = {
			{ "2019", "2019-datacenter-core-g2", "2019-datacenter-gensecond", "WindowsServer" },
			{ "2022", "2022-datacenter-core-g2", "2022-datacenter-g2", "windowsserver2022" },
			{ "2025", "2025-datacenter-core-g2", "2025-datacenter-g2", "WindowsServer" },
			/* Datacenter: Azure Edition, the edition Azure hotpatches:
			 * the SKUs Azure accepts enableHotpatching for are listed
			 * in hashicorp/terraform-provider-azurerm
			 * internal/services/compute/helpers/shared_schema.go
			 * (2b7827cf, read 2026-12-07), 2025's under the
			 * WindowsServer offer. Hotpatching is a setting of the VM
			 * deployed from the image (patchMode AutomaticByPlatform),
			 * not of the image: packer-plugin-azure has no such
			 * option (none at 999eec9e, 2026-07-16), and the build VM
			 * needs none. */
			{ "2025", "2025-datacenter-azure-edition-core", "2025-datacenter-azure-edition",
			  "WindowsServer", PLATFORM_EDITION_AZURE },
		},
	},
	{
		.name = "vsphere-iso", .provider = "vsphere", .providers = "|vsphere|",
		.fw = PLATFORM_FW_UEFI, .transfer = PLATFORM_CD, .sysprep = "shutdown",
		.plugin = "vsphere", .plugin_source = "github.com/vmware/vsphere",
		.plugin_version = "2.0.0",   /* v2.0.0, 2025-08-06, 2af6d832 */
		/* pvscsi for Setup; VMware Tools, which the answer file runs at
		 * first logon (recipes/components/vmware-tools.yaml) */
		.winpe = { PLATFORM_WINPE_DRIVERS, "VMwareTools" },
		.secrets = { "vsphere_password" },
		.base_var = "vsphere_guest_os_type",
		.base = {
			{ "2019", "windows2019srv_64Guest", "windows2019srv_64Guest" },
			{ "2022", "windows2019srvNext_64Guest", "windows2019srvNext_64Guest" },
			{ "2025", "windows2022srvNext_64Guest", "windows2022srvNext_64Guest" },
		},
	},
	{
		/* qemu's image runs on any KVM cloud: OpenStack, Nutanix AHV, a
		 * config drive or NoCloud seed, or a plain HTTP endpoint */
		.name = "qemu", .provider = "nocloud",
		.providers = "|nocloud|openstack|nutanix|generic-http|",
		.fw = PLATFORM_FW_BIOS, .transfer = PLATFORM_CD, .sysprep = "shutdown",
		.plugin = "qemu", .plugin_source = "github.com/hashicorp/qemu",
		.plugin_version = "1.1.4",   /* v1.1.4, 2025-07-30, 7db0aae1 */
		/* viostor, vioscsi, NetKVM (recipes/components/virtio-win.yaml) */
		.winpe = { PLATFORM_WINPE_DRIVERS },
	},
	{
		.name = "hyperv-iso", .provider = "nocloud", .providers = "|nocloud|",
		.fw = PLATFORM_FW_UEFI, .transfer = PLATFORM_CD, .sysprep = "shutdown",
		.plugin = "hyperv", .plugin_source = "github.com/hashicorp/hyperv",
		.plugin_version = "1.1.4",   /* v1.1.4, 2024-12-12, 8931f2b0 */
	},
	{
		.name = "amazon-ebs", .provider = "aws", .providers = "|aws|",
		.fw = PLATFORM_FW_NONE, .transfer = PLATFORM_ARCHIVE, .sysprep = "aws",
		.plugin = "amazon", .plugin_source = "github.com/hashicorp/amazon",
		.plugin_version = "1.8.2",   /* v1.8.2, 2026-07-13, 38965336 */
		.secrets = { "winrm_password" },
		.files = { "aws/winrm-bootstrap.txt" },
		.base_var = "aws_source_ami_name",
		.base = {
			{ "2019", "Windows_Server-2019-English-Core-Base-*",
			  "Windows_Server-2019-English-Full-Base-*" },
			{ "2022", "Windows_Server-2022-English-Core-Base-*",
			  "Windows_Server-2022-English-Full-Base-*" },
			{ "2025", "Windows_Server-2025-English-Core-Base-*",
			  "Windows_Server-2025-English-Full-Base-*" },
		},
	},
	{
		/* Oracle Cloud Infrastructure, as image-builder builds Windows
		 * there (images/capi/packer/oci/packer-windows.json): cloudbase-init
		 * with HttpService, OCI's OpenStack-compatible metadata endpoint;
		 * WinRM over HTTPS as opc, set up by user data
		 * (packer/oci/scripts/winrm_bootstrap_template.txt); sysprep with
		 * cloudbase-init's Unattend.xml and /quit, then OCI images the
		 * instance (packer/oci/scripts/sysprep.ps1). Base images: OCI's
		 * Windows platform images, by operating_system_version; OCI
		 * publishes no Server Core image, so a Server Core recipe has no
		 * base image here (D15: never the Desktop Experience instead). */
		.name = "oracle-oci", .provider = "openstack", .providers = "|openstack|",
		.fw = PLATFORM_FW_NONE, .transfer = PLATFORM_ARCHIVE, .sysprep = "oci",
		.plugin = "oracle", .plugin_source = "github.com/hashicorp/oracle",
		.plugin_version = "1.1.2",   /* v1.1.2, 2026-01-16, 67aeddfe */
		.secrets = { "oci_winrm_password" },
		.files = { "oci/oci-winrm-bootstrap.txt" },
		.base_var = "oci_operating_system_version",
		.base = {
			{ "2019", NULL, "Server 2019 Datacenter" },
			{ "2022", NULL, "Server 2022 Datacenter" },
			{ "2025", NULL, "Server 2025 Datacenter" },
		},
	},
};
const size_t platform_nbuilders = ARRAY_SIZE(platform_builders);

/*
 * Per Windows Server version. GVLKs: Microsoft's "Key Management Services
 * (KMS) client activation and product keys" (learn.microsoft.com,
 * windows-server/get-started/kms-client-activation-keys), the keys
 * image-builder puts in its answer files
 * (packer/ova/windows/windows-20xx/autounattend.xml). Pause images: the
 * first registry.k8s.io/pause with a Windows Server 2025 variant is 3.10.2
 * (containerd PR #13156); 3.10 serves 2019 and 2022.
 * @where the platform table: every Packer builder, cloudbase-init provider
 *   and Windows Server version -- each Windows Server version: build, image
 *   names, pause image, GVLKs
 */
const struct platform_windows platform_windows[] = {
	{ "2019", "17763", "Windows Server 2019", "registry.k8s.io/pause:3.10",
	  { { "standard", "N69G4-B89J2-4G8F4-WWYCC-J464C" },
	    { "datacenter", "WMDGN-G9PQG-XVVXX-R3X43-63DFG" } } },
	{ "2022", "20348", "Windows Server 2022", "registry.k8s.io/pause:3.10",
	  { { "standard", "VDYBN-27WPP-V4HQT-9VMD4-VMK7H" },
	    { "datacenter", "WX4NM-KYWYW-QJJR4-XV3QB-6VM33" } } },
	{ "2025", "26100", "Windows Server 2025", "registry.k8s.io/pause:3.10.2",
	  { { "standard", "TVRH6-WHNXV-R9WG3-9XRFY-MY832" },
	    { "datacenter", "D764K-2NDRG-47T6Q-P8T8W-YP6DF" } } },
};
const size_t platform_nwindows = ARRAY_SIZE(platform_windows);

/* cloudbase-init's metadata services winbuild renders a conf pair for
 * (recipes/templates/cloudbase-init/, docs/node.md) */
/*
 * Microsoft's gMSA plugin for Container Credential Guard (recipes/components/
 * gmsa-ccg.yaml): the COM registration of its registerplugin.reg
 * (microsoft/Azure-Key-Vault-Plugin-gMSA src/CCGAKVPlugin/registerplugin.reg,
 * commit 432b719), its entry in CCG's plugin list below TrustedInstaller's
 * COMClasses key (taken and given back, as its install-gmsa-keyvault-
 * plugin.ps1 in image-builder's images/capi/ansible/windows/roles/gmsa does),
 * and its DLL in System32, where the registration and the event manifests'
 * resourceFileName (%windir%\system32\ccgakvplugin.dll) look for it.
 */
#define CCG_WHY "gMSA's CCG plugin (gmsa-ccg.yaml)"
/*
 * @where the one guard for a component's Windows objects (every key marked
 *   `S_WIN(kind)`) -- the allow list
 */
const struct platform_winallow platform_winallow[] = {
	{ "SOFTWARE\\Classes\\Interface\\{6ECDA518-2010-4437-8BC3-46E752B7B172}", NULL, NULL, CCG_WHY },
	{ "SOFTWARE\\Classes\\AppID\\{557110E1-88BC-4583-8281-6AAC6F708584}", NULL, NULL, CCG_WHY },
	{ "SOFTWARE\\Classes\\CLSID\\{CCC2A336-D7F3-4818-A213-272B7924213E}", NULL, NULL, CCG_WHY },
	{ "SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses\\{CCC2A336-D7F3-4818-A213-272B7924213E}",
	  "SYSTEM\\CurrentControlSet\\Control\\CCG\\COMClasses", NULL, CCG_WHY },
	{ NULL, NULL, "Windows/System32/CCGAKVPlugin.dll", CCG_WHY },
};
const size_t platform_nwinallow = ARRAY_SIZE(platform_winallow);

static const char *const providers[] = {
	"azure", "aws", "vsphere", "nocloud", "openstack", "nutanix", "generic-http",
};

const char *platform_set_item(enum platform_set set, size_t i)
{
	switch (set) {
	case PLATFORM_SET_BUILDERS:
		return i < platform_nbuilders ? platform_builders[i].name : NULL;
	case PLATFORM_SET_PROVIDERS:
		if (!i)
			return "auto";
		return i - 1 < ARRAY_SIZE(providers) ? providers[i - 1] : NULL;
	case PLATFORM_SET_VERSIONS:
		return i < platform_nwindows ? platform_windows[i].version : NULL;
	case PLATFORM_SET_EDITIONS:
		/* the editions of the install media (a GVLK each), then the
		 * one only a cloud's own images have */
		return i < ARRAY_SIZE(platform_windows[0].gvlk) ?
			platform_windows[0].gvlk[i].edition :
			i == ARRAY_SIZE(platform_windows[0].gvlk) ? PLATFORM_EDITION_AZURE : NULL;
	}
	return NULL;
}

int platform_set_has(enum platform_set set, const char *name)
{
	const char *s;

	for (size_t i = 0; (s = platform_set_item(set, i)); i++)
		if (!strcmp(s, name))
			return 1;
	return 0;
}

void platform_set_join(enum platform_set set, const char *sep, char *out, size_t len)
{
	size_t n = 0;
	const char *s;

	if (!len)
		return;
	*out = '\0';
	for (size_t i = 0; (s = platform_set_item(set, i)); i++) {
		int w = snprintf(out + n, len - n, "%s%s", i ? sep : "", s);

		if (w < 0 || (size_t)w >= len - n)
			return;
		n += (size_t)w;
	}
}

const struct platform_builder *platform_builder(const char *name)
{
	for (size_t i = 0; i < platform_nbuilders; i++)
		if (!strcmp(platform_builders[i].name, name))
			return &platform_builders[i];
	return NULL;
}

const struct platform_windows *platform_windows_find(const char *version)
{
	for (size_t i = 0; i < platform_nwindows; i++)
		if (!strcmp(platform_windows[i].version, version))
			return &platform_windows[i];
	return NULL;
}

/*
 * @where which builders are ISO builders; `--builder` narrowing
 *   `packer.builders` -- from the platform table
 */
int platform_builder_is_iso(const char *name)
{
	const struct platform_builder *b = platform_builder(name);

	return b && b->fw != PLATFORM_FW_NONE;
}

/*
 * @where which cloudbase-init provider each Packer builder's image gets
 *   (`auto`), and which contradict a builder -- the boot flow is in
 *   docs/node.md
 */
const char *platform_provider_for(const struct platform_builder *b, const char *provider)
{
	char pat[64];

	if (!b)
		return NULL;
	if (!strcmp(provider, "auto"))
		return b->provider;
	if (strlen(provider) > sizeof(pat) - 3)
		return NULL;
	snprintf(pat, sizeof(pat), "|%s|", provider);
	return strstr(b->providers, pat) ? provider : NULL;
}

const char *platform_base_edition(const struct platform_base *base)
{
	return base->edition ? base->edition : "datacenter";
}

const struct platform_base *platform_base_of(const struct platform_builder *b,
					     const char *version, const char *edition)
{
	/* an ISO builder's per-version value (vSphere's guest OS type) is the
	 * same whichever edition its ISO installs */
	if (b && b->fw != PLATFORM_FW_NONE)
		edition = "datacenter";
	for (size_t i = 0; b && b->base_var && i < PLATFORM_MAX_VERSIONS; i++)
		if (b->base[i].version && !strcmp(b->base[i].version, version) &&
		    !strcmp(platform_base_edition(&b->base[i]), edition))
			return &b->base[i];
	return NULL;
}

const char *platform_base_image(const struct platform_builder *b, const char *version,
				const char *edition, int desktop)
{
	const struct platform_base *base = platform_base_of(b, version, edition);

	return !base ? NULL : desktop ? base->desktop : base->core;
}

/*
 * The folder name is Windows Setup's own: Setup.exe loads every driver
 * below a "$WinPEDriver$" folder at the root of any attached drive, in
 * windowsPE and into the installed image (Microsoft KB 2686316,
 * "Limitations of $WinPeDriver$"). image-builder instead lists `a:\` in
 * the answer file's PnpCustomizationsWinPE DriverPaths and carries the
 * pvscsi driver on a floppy (packer/ova/packer-windows.json floppy_dirs,
 * packer/ova/windows/windows-2022-efi/autounattend.xml): a floppy has a
 * fixed drive letter, but holds 1.44 MB and generation 2 Hyper-V has none,
 * while a CD's letter in windowsPE depends on the order the install
 * media, the payload CD and any tools ISO are found. Packer's CD step
 * puts a directory at the CD root under its own name
 * (packer-plugin-sdk multistep/commonsteps/step_create_cdrom.go), hence
 * PLATFORM_WINPE_DRIVERS as a folder's name in the tree.
 * @where which drivers and tools each ISO builder's CD carries for Windows
 *   Setup (`$WinPEDriver$`, `VMwareTools`) -- each entry's `winpe` list
 */
int platform_winpe_dir(const struct platform_builder *b, char *out, size_t len)
{
	int n;

	if (!len)
		return -1;
	*out = '\0';
	if (!b || b->fw == PLATFORM_FW_NONE)
		return -1;
	n = snprintf(out, len, "ProgramData/winbuild/winpe/%s", b->name);
	if (n < 0 || (size_t)n >= len) {
		*out = '\0';
		return -1;
	}
	return 0;
}

const char *platform_gvlk(const struct platform_windows *w, const char *edition)
{
	for (size_t i = 0; w && i < ARRAY_SIZE(w->gvlk); i++)
		if (w->gvlk[i].edition && !strcmp(w->gvlk[i].edition, edition))
			return w->gvlk[i].key;
	return NULL;
}
