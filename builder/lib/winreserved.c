#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/winpath.h"
#include "lib/winreserved.h"

/*
 * The key names of the services of Windows Server, sorted case-insensitively.
 * Source: Microsoft, "Guidance on disabling system services on Windows Server
 * 2016 with Desktop Experience" (learn.microsoft.com, windows-server/security/
 * windows-services/security-guidelines-for-disabling-system-services-in-
 * windows-server; MicrosoftDocs/windowsserverdocs), every "Service name" of its
 * tables: the services of Server Core and Desktop Experience, which Windows
 * Server 2019, 2022 and 2025 still ship. Added, from a Windows container
 * host (2019/2022/2025 with the Containers and Hyper-V features that
 * Kubernetes nodes enable): hns, vmcompute, vmms, WinNat (the NAT driver's
 * service), and Defender's SecurityHealthService and Sense. A name missing
 * here is refused by nothing else, so the table errs on the side of more.
 */
static const char *const services[] = {
	"AJRouter", "ALG", "AppIDSvc", "Appinfo", "AppMgmt", "AppReadiness", "AppVClient",
	"AppXSvc", "AudioEndpointBuilder", "Audiosrv", "AxInstSV", "BFE", "BITS",
	"BrokerInfrastructure", "Browser", "bthserv", "CDPSvc", "CDPUserSvc", "CertPropSvc",
	"ClipSVC", "COMSysApp", "CoreMessagingRegistrar", "CryptSvc", "CscService",
	"DcomLaunch", "DcpSvc", "defragsvc", "DeviceAssociationService", "DeviceInstall",
	"DevQueryBroker", "Dhcp", "diagnosticshub.standardcollector.service", "DiagTrack",
	"DmEnrollmentSvc", "dmwappushservice", "Dnscache", "dot3svc", "DPS", "DsmSvc",
	"DsSvc", "EapHost", "EFS", "embeddedmode", "EntAppSvc", "EventLog", "EventSystem",
	"fdPHost", "FDResPub", "FontCache", "FrameServer", "gpsvc", "hidserv", "hns",
	"HvHost", "icssvc", "IKEEXT", "iphlpsvc", "KeyIso", "KPSSVC", "KtmRm", "LanmanServer",
	"LanmanWorkstation", "lfsvc", "LicenseManager", "lltdsvc", "lmhosts", "LSM",
	"MapsBroker", "MpsSvc", "MSDTC", "MSiSCSI", "msiserver", "NcaSvc", "NcbService",
	"Netlogon", "Netman", "netprofm", "NetSetupSvc", "NetTcpPortSharing", "NgcCtnrSvc",
	"NgcSvc", "NlaSvc", "nsi", "OneSyncSvc", "PcaSvc", "PerfHost", "PhoneSvc",
	"PimIndexMaintenanceSvc", "pla", "PlugPlay", "PolicyAgent", "Power", "PrintNotify",
	"ProfSvc", "QWAVE", "RasAuto", "RasMan", "RemoteAccess", "RemoteRegistry", "RmSvc",
	"RpcEptMapper", "RpcLocator", "RpcSs", "RSoPProv", "sacsvr", "SamSs", "SCardSvr",
	"ScDeviceEnum", "Schedule", "SCPolicySvc", "seclogon", "SecurityHealthService",
	"SENS", "Sense", "SensorDataService", "SensorService", "SensrSvc", "SessionEnv",
	"SharedAccess", "ShellHWDetection", "smphost", "SNMPTRAP", "Spooler", "sppsvc",
	"SSDPSRV", "SstpSvc", "StateRepository", "stisvc", "StorSvc", "svsvc", "swprv",
	"SysMain", "SystemEventsBroker", "TabletInputService", "TapiSrv", "TermService",
	"Themes", "TieringEngineService", "tiledatamodelsvc", "TimeBrokerSvc", "TrkWks",
	"TrustedInstaller", "tzautoupdate", "UALSVC", "UevAgentService", "UI0Detect",
	"UmRdpService", "UnistoreSvc", "upnphost", "UserDataSvc", "UserManager", "UsoSvc",
	"VaultSvc", "vds", "vmcompute", "vmicguestinterface", "vmicheartbeat",
	"vmickvpexchange", "vmicrdv", "vmicshutdown", "vmictimesync", "vmicvmsession",
	"vmicvss", "vmms", "VSS", "W32Time", "WalletService", "WbioSrvc", "Wcmsvc",
	"WdiServiceHost", "WdiSystemHost", "WdNisSvc", "Wecsvc", "WEPHOSTSVC",
	"wercplsupport", "WerSvc", "WiaRpc", "WinDefend", "WinHttpAutoProxySvc", "Winmgmt",
	"WinNat", "WinRM", "wisvc", "wlidsvc", "wmiApSrv", "WPDBusEnum", "WpnService",
	"WpnUserService", "WSearch", "wuauserv", "wudfsvc", "XblAuthManager", "XblGameSave",
};

static int cmp_service(const void *key, const void *elem)
{
	return strcasecmp(key, *(const char *const *)elem);
}

/*
 * @where names and places Windows owns: its services, system folders,
 *   management ports
 */
int winreserved_service(const char *name)
{
	return bsearch(name, services, sizeof(services) / sizeof(services[0]),
		       sizeof(services[0]), cmp_service) != NULL;
}

/* Microsoft, "Service overview and network port requirements for Windows"
 * (learn.microsoft.com, troubleshoot/windows-server/networking/service-
 * overview-and-network-port-requirements): RPC 135, NetBIOS 139, SMB 445,
 * Remote Desktop 3389, WinRM 5985/5986 (the port Packer's communicator
 * itself uses during the build, and which 08-sysprep.ps1 closes again). */
static const int mgmt_ports[] = { 135, 139, 445, 3389, 5985, 5986 };

/*
 * @where names and places Windows owns: its services, system folders,
 *   management ports
 */
int winreserved_port(int port)
{
	for (size_t i = 0; i < sizeof(mgmt_ports) / sizeof(mgmt_ports[0]); i++)
		if (mgmt_ports[i] == port)
			return 1;
	return 0;
}

/* Tree paths: "" is C:\ itself. */
static const char *const shared_tops[] = {   /* the folder itself only */
	"Program Files", "Program Files (x86)", "ProgramData",
};
static const char *const system_dirs[] = {   /* the folder and all below */
	"Windows", "Users", "ProgramData/Microsoft", "Program Files/Common Files",
	"Program Files (x86)/Common Files", "Program Files/Windows Defender",
	"Program Files/Windows Defender Advanced Threat Protection",
	"Program Files/WindowsApps", "Program Files/WindowsPowerShell",
	"Program Files (x86)/WindowsPowerShell", "$Recycle.Bin", "Boot", "Recovery",
	"System Volume Information", "PerfLogs",
};

static size_t ncomp(const char *t)
{
	size_t n = *t ? 1 : 0;

	for (; *t; t++)
		n += *t == '/';
	return n;
}

/* Names X and Y (one path component each) are one name on Windows: the
 * same, equal once folded, or one an 8.3 alias of the other (a single name
 * is its own first difference for winpath_paths_clash). */
static int same_name(const char *x, const char *y)
{
	const char *why = NULL;

	return !strcmp(x, y) || winpath_paths_clash(x, y, &why);
}

/* Component by component: winpath_paths_clash() says whether two paths
 * that differ are one place at their first difference only, and would
 * take "OPT/other" for "opt/evil". */
int winreserved_under(const char *t, const char *dir)
{
	while (*dir) {
		size_t nt = strcspn(t, "/"), nd = strcspn(dir, "/");
		char *x, *y;
		int same;

		if (!*t)
			return 0;
		x = xstrndup(t, nt);
		y = xstrndup(dir, nd);
		same = same_name(x, y);
		free(x);
		free(y);
		if (!same)
			return 0;
		t += nt + (t[nt] == '/');
		dir += nd + (dir[nd] == '/');
	}
	return 1;
}

/*
 * @where names and places Windows owns: its services, system folders,
 *   management ports
 */
const char *winreserved_location(const char *t)
{
	if (!*t)
		return "C:\\";
	for (size_t i = 0; i < sizeof(shared_tops) / sizeof(shared_tops[0]); i++)
		if (ncomp(t) == 1 && winreserved_under(t, shared_tops[i]))
			return shared_tops[i];
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++)
		if (winreserved_under(t, system_dirs[i]))
			return system_dirs[i];
	return NULL;
}
