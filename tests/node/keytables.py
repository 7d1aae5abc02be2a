#!/usr/bin/env python3
"""Key tables of the configuration files winbuild generates, per upstream
version, each fact with the upstream file it comes from (issue 14, item 8).
Facts, not code: the tables name keys; nothing here is copied source.

usage:
  keytables.py containerd VERSION CONFIG.toml
  keytables.py cloudbase-init PROVIDER CONF [UNATTEND_CONF]
Exit 0 when every key of the file is valid for that version/provider and
the version's own key is used; 1 with the offending keys otherwise.
"""
import configparser
import sys
import tomllib

# ---- containerd --------------------------------------------------------
# Config version 2 (containerd 1.x): containerd/containerd v1.7
#   pkg/cri/config/config.go (PluginConfig: sandbox_image; ContainerdConfig:
#   snapshotter, default_runtime_name, runtimes; Runtime: runtime_type;
#   CniConfig: bin_dir, conf_dir, max_conf_num, conf_template, ip_pref,
#   setup_serially) and services/server/config/config.go (version, root,
#   state, grpc.address).
# Config version 3 (containerd 2.x): internal/cri/config/config.go
#   (ImageConfig: snapshotter, pinned_images; ContainerdConfig:
#   default_runtime_name, runtimes; Runtime: runtime_type; CniConfig).
#   CniConfig in 2.0.x: bin_dir, conf_dir, max_conf_num, setup_serially,
#   conf_template, ip_pref, use_internal_loopback (read at commit
#   00142976c7947b870a6e93d31f1d03e0238b4995, which has bin_dir only).
#   From 2.1 CniConfig has bin_dirs; bin_dir is deprecated and removed in
#   2.4 (containerd RELEASES.md, deprecation table; ../shared/WINDOWS-NODE.md).
V2_CRI = 'plugins.io.containerd.grpc.v1.cri'
CNI_COMMON = {'conf_dir', 'max_conf_num', 'conf_template', 'ip_pref', 'setup_serially'}
RUNTIME = {'runtime_type', 'runtime_path', 'pod_annotations', 'container_annotations',
           'options', 'privileged_without_host_devices', 'base_runtime_spec',
           'cni_conf_dir', 'cni_max_conf_num', 'snapshotter', 'sandboxer', 'io_type'}


def containerd_table(version):
    major, minor = (int(x) for x in version.split('.')[:2])
    top = {'version', 'root', 'state', 'grpc', 'plugins'}
    if major == 1:
        return 2, 'bin_dir', {
            '': top, 'grpc': {'address'}, 'plugins': {'io.containerd.grpc.v1.cri'},
            V2_CRI: {'sandbox_image', 'containerd', 'cni'},
            V2_CRI + '.containerd': {'snapshotter', 'default_runtime_name', 'runtimes'},
            V2_CRI + '.containerd.runtimes.*': RUNTIME,
            V2_CRI + '.cni': CNI_COMMON | {'bin_dir'},
        }
    cni_key = 'bin_dir' if (major, minor) < (2, 1) else 'bin_dirs'
    return 3, cni_key, {
        '': top, 'grpc': {'address'},
        'plugins': {'io.containerd.cri.v1.images', 'io.containerd.cri.v1.runtime'},
        'plugins.io.containerd.cri.v1.images': {'snapshotter', 'pinned_images'},
        'plugins.io.containerd.cri.v1.images.pinned_images': {'sandbox'},
        'plugins.io.containerd.cri.v1.runtime': {'containerd', 'cni'},
        'plugins.io.containerd.cri.v1.runtime.containerd': {'default_runtime_name', 'runtimes'},
        'plugins.io.containerd.cri.v1.runtime.containerd.runtimes.*': RUNTIME,
        'plugins.io.containerd.cri.v1.runtime.cni':
            CNI_COMMON | {'use_internal_loopback', cni_key},
    }


def walk(d, path, out):
    for k, v in d.items():
        out.append((path, k))
        if isinstance(v, dict):
            walk(v, (path + '.' if path else '') + k, out)


# What containerd 2.x's own Windows default runtime carries
# (internal/cri/config/config_windows.go, DefaultRuntimeConfig): a config
# that declares a runtime of that name replaces the default as a whole, so
# it must set these itself (D21).
V3_DEFAULT_RUNTIME = ('runhcs-wcow-process', {
    'runtime_type': 'io.containerd.runhcs.v1',
    'container_annotations': ['io.microsoft.container.*'],
    'options': {'ScrubLogs': True},
})


def check_containerd(version, path):
    want_version, cni_key, table = containerd_table(version)
    cfg = tomllib.load(open(path, 'rb'))
    bad = []
    if want_version == 3:
        name, want = V3_DEFAULT_RUNTIME
        runtimes = cfg.get('plugins', {}).get('io.containerd.cri.v1.runtime', {}) \
            .get('containerd', {}).get('runtimes', {})
        if name in runtimes:
            got = runtimes[name]
            for k, v in want.items():
                if k == 'options':
                    for ok, ov in v.items():
                        if got.get('options', {}).get(ok) != ov:
                            bad.append('runtime %s: options.%s is %r, containerd\'s default '
                                       'sets %r' % (name, ok, got.get('options', {}).get(ok), ov))
                elif got.get(k) != v:
                    bad.append('runtime %s: %s is %r, containerd\'s default sets %r'
                               % (name, k, got.get(k), v))
    if cfg.get('version') != want_version:
        bad.append('version = %r, containerd %s reads %d' % (cfg.get('version'), version,
                                                              want_version))
    keys = []
    walk(cfg, '', keys)
    for tbl, k in keys:
        allowed = table.get(tbl)
        if allowed is None:
            parent = tbl.rsplit('.', 1)[0] + '.*'
            allowed = table.get(parent)
        if tbl.endswith('.runtimes'):
            continue    # runtime names are the user's
        if '.runtimes.' in tbl and tbl.endswith('.options'):
            continue    # the shim's own options (hcsshim runhcs Options)
        if allowed is None or k not in allowed:
            bad.append('[%s] %s' % (tbl, k))
    cni = [k for tbl, k in keys if tbl.endswith('.cni')]
    if cni_key not in cni:
        bad.append('no %s: containerd %s reads its CNI plugins from %s' % (cni_key, version,
                                                                          cni_key))
    return bad


# ---- cloudbase-init -----------------------------------------------------
# Metadata services: cloudbase/cloudbase-init cloudbaseinit/metadata/services/
#   azureservice.py (AzureService), ec2service.py (EC2Service),
#   vmwareguestinfoservice.py (VMwareGuestInfoService), httpservice.py
#   (HttpService, an OpenStack service), configdrive.py (ConfigDriveService),
#   nocloudservice.py (NoCloudConfigDriveService), gceservice.py (GCEService).
# Options, read in cloudbase/cloudbase-init cloudbaseinit/conf/default.py
#   (GlobalOptions, group DEFAULT): allow_reboot and stop_service_on_exit
#   (both default True), check_latest_version, mtools_path, bsdtar_path,
#   logging_serial_port_settings, san_policy, local_scripts_path,
#   mtu_use_dhcp_config, username, groups, ntp_use_dhcp_config,
#   inject_user_password (default True), first_logon_behaviour,
#   metadata_services (default: HttpService first), plugins,
#   metadata_report_provisioning_started/_completed (default False),
#   ephemeral_disk_volume_label.
#   Logging options (verbose, debug, logdir, logfile, default_log_levels)
#   are oslo.log's, which cloudbase-init registers; config_drive_raw_hhd/
#   cdrom/vfat are the config drive options' DEFAULT-group names (not
#   re-read here: taken as cloudbase-init's documented conf examples).
SERVICES = 'cloudbaseinit.metadata.services.'
PROVIDER_SERVICES = {
    'azure': [SERVICES + 'azureservice.AzureService'],
    'aws': [SERVICES + 'ec2service.EC2Service'],
    'vsphere': [SERVICES + 'vmwareguestinfoservice.VMwareGuestInfoService'],
    'nocloud': [SERVICES + 'nocloudservice.NoCloudConfigDriveService',
                SERVICES + 'configdrive.ConfigDriveService'],
    'openstack': [SERVICES + 'configdrive.ConfigDriveService',
                  SERVICES + 'httpservice.HttpService'],
    'nutanix': [SERVICES + 'configdrive.ConfigDriveService'],
    'generic-http': [SERVICES + 'httpservice.HttpService'],
}
CBI_OPTIONS = {
    'username', 'groups', 'inject_user_password', 'first_logon_behaviour',
    'config_drive_raw_hhd', 'config_drive_cdrom', 'config_drive_vfat',
    'bsdtar_path', 'mtools_path', 'verbose', 'debug', 'logdir', 'logfile',
    'default_log_levels', 'logging_serial_port_settings', 'mtu_use_dhcp_config',
    'ntp_use_dhcp_config', 'local_scripts_path', 'check_latest_version',
    'metadata_services', 'plugins', 'allow_reboot', 'stop_service_on_exit',
    'san_policy', 'metadata_report_provisioning_started',
    'metadata_report_provisioning_completed', 'ephemeral_disk_volume_label',
}


def check_cloudbase(provider, paths):
    bad = []
    for path in paths:
        cp = configparser.ConfigParser(interpolation=None)
        cp.read_string(open(path, encoding='utf-8').read())
        d = cp['DEFAULT']
        for k in d:
            if k not in CBI_OPTIONS:
                bad.append('%s: unknown option %s' % (path, k))
        svc = [s.strip() for s in d.get('metadata_services', '').split(',') if s.strip()]
        if svc != PROVIDER_SERVICES[provider]:
            bad.append('%s: metadata_services %r, provider %s needs %r' %
                       (path, svc, provider, PROVIDER_SERVICES[provider]))
        if provider != 'openstack' and provider != 'generic-http' and \
                any('httpservice' in s for s in svc):
            bad.append('%s: OpenStack HttpService on %s' % (path, provider))
        if d.get('allow_reboot', '').lower() == 'true' and path.endswith('unattend.conf'):
            bad.append('%s: allow_reboot in the unattend conf' % path)
    return bad


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ('containerd', 'cloudbase-init'):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == 'containerd':
        bad = check_containerd(sys.argv[2], sys.argv[3])
    else:
        bad = check_cloudbase(sys.argv[2], sys.argv[3:])
    for b in bad:
        print('keytables: %s' % b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
