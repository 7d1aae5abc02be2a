# The simulated Windows inside one PowerShell runspace (docs/node.md, "The
# engine tier"). tests/win/packer.ps1 runs this in every fresh runspace before
# the provisioner's command, as the machine a script finds when Packer starts
# powershell.exe for it. Environment (set by packer.ps1):
#   WBSIM_ROOT   the directory that is C:\      WBSIM_STATE  the state model (JSON)
#   WBSIM_FAKE   tests/win/fakewin.py           WBSIM_ARGLOG one JSON line per native call
#   WBSIM_CD     the payload CD's directory and label (ISO builders), or ''
#
# What is real here: the PowerShell 7.6 engine (parser, StrictMode, parameter
# binding, Stop), the FileSystem provider behind C:, Get-FileHash, Copy-Item,
# Expand-Archive, ConvertFrom-Json; native arguments passed as Windows
# PowerShell 5.1 passes them ($PSNativeCommandArgumentPassing = 'Legacy').
# What is mocked: every Windows-only cmdlet the scripts call, over one state
# model shared with the fake programs (tests/win/fakewin.py). Mocks of
# cmdlets pwsh has (Test-Path, New-Item, *-ItemProperty, Get-Item, Join-Path,
# Split-Path, Start-Sleep, Invoke-WebRequest) are proxies built from the real
# cmdlet's parameter metadata, so a misspelt parameter fails as it would on
# Windows; they handle HKLM: (the registry model) and pass the rest on.

$ErrorActionPreference = 'Stop'
$global:PSNativeCommandArgumentPassing = 'Legacy'
$null = New-PSDrive -Name C -PSProvider FileSystem -Root $env:WBSIM_ROOT -Scope Global
if ("$env:WBSIM_CD" -ne '') {
    $cdDir, $null = $env:WBSIM_CD -split '\|', 2
    $null = New-PSDrive -Name E -PSProvider FileSystem -Root $cdDir -Scope Global
}
Set-Location -LiteralPath $env:WBSIM_ROOT

# ---- the state model (one JSON file; fakewin.py reads and writes it too) ----
function global:Wb-Load { Get-Content -Raw -LiteralPath $env:WBSIM_STATE | ConvertFrom-Json -AsHashtable }
function global:Wb-Save([hashtable]$St) {
    $tmp = "$env:WBSIM_STATE.tmp"
    [IO.File]::WriteAllText($tmp, ($St | ConvertTo-Json -Depth 20))
    Move-Item -LiteralPath $tmp -Destination $env:WBSIM_STATE -Force
}

# ---- native programs: everything under C:\ runs as its fake ----
# A program outside the system drive is not on the simulated Windows.
$ExecutionContext.InvokeCommand.PostCommandLookupAction = {
    param($name, $ev)
    $cmd = $ev.Command
    if ($cmd -isnot [System.Management.Automation.ApplicationInfo]) { return }
    $root = [IO.Path]::GetFullPath($env:WBSIM_ROOT).TrimEnd('/') + '/'
    $host_path = $cmd.Path
    if (-not $host_path.StartsWith($root)) {
        if ($host_path -eq $env:WBSIM_PYTHON) { return }
        throw "simulated Windows: '$name' is not a program of this machine ($host_path)"
    }
    $win = 'C:\' + $host_path.Substring($root.Length).Replace('/', '\')
    $ev.CommandScriptBlock = {
        # what PowerShell handed over (values), for the argv model; the fake
        # records what it received after Legacy quoting and command-line parsing
        $line = @{ prog = $win; values = @($args | ForEach-Object { "$_" }) } | ConvertTo-Json -Compress
        [IO.File]::AppendAllText($env:WBSIM_ARGLOG, $line + "`n")
        & $env:WBSIM_PYTHON -S $env:WBSIM_FAKE run $win @args
        # Windows exit codes are 32 bits (3010, 1618), Linux's 8: the fake
        # leaves the whole code beside the state, and $LASTEXITCODE gets it
        $global:LASTEXITCODE = [int](Get-Content -Raw -LiteralPath "$env:WBSIM_STATE.exit")
    }.GetNewClosure()
}

# ---- the registry model ----
function global:Wb-IsReg([string]$P) { $P -match '^(HKLM:|Registry::HKEY_LOCAL_MACHINE)' }
function global:Wb-RegKey([string]$P) {
    $k = $P -replace '^Registry::HKEY_LOCAL_MACHINE', 'HKLM:'
    $k = $k -replace '/', '\' -replace '\\+$', ''
    $k = $k -replace '^HKLM:(?!\\)', 'HKLM:\'
    return $k
}
function global:Wb-ServiceOfKey([hashtable]$St, [string]$Key) {
    if ($Key -match '^HKLM:\\SYSTEM\\CurrentControlSet\\Services\\([^\\]+)$') {
        return $St.services[$Matches[1].ToLowerInvariant()]
    }
    return $null
}
function global:Wb-KeyExists([hashtable]$St, [string]$Key) {
    $l = $Key.ToLowerInvariant()
    if ($St.registry.ContainsKey($l)) { return $true }
    if ($null -ne (Wb-ServiceOfKey $St $Key)) { return $true }
    foreach ($k in $St.registry.Keys) { if ($k.StartsWith($l + '\')) { return $true } }
    # the hives and the keys every Windows has
    return ($l -match '^hklm:\\(software|system)(\\|$)' -and ($l.Split('\').Count -le 3))
}
function global:Wb-Values([hashtable]$St, [string]$Key) {
    $svc = Wb-ServiceOfKey $St $Key
    if ($null -ne $svc) {
        $start = @{ boot = 0; system = 1; auto = 2; 'delayed-auto' = 2; demand = 3; disabled = 4 }[$svc.start]
        return [ordered]@{
            imagepath       = @{ name = 'ImagePath'; type = 'ExpandString'; value = $svc.binPath }
            start           = @{ name = 'Start'; type = 'DWord'; value = $start }
            dependonservice = @{ name = 'DependOnService'; type = 'MultiString'; value = @($svc.depend) }
        }
    }
    $r = $St.registry[$Key.ToLowerInvariant()]
    if ($null -eq $r) { return [ordered]@{} }
    return $r.values
}
function global:Wb-Expand($V) {
    if ($V -is [string]) { return [Environment]::ExpandEnvironmentVariables($V) }
    return $V
}
function global:Wb-RegNotFound([string]$Key) {
    $e = [System.Management.Automation.ItemNotFoundException]::new("Cannot find path '$Key' because it does not exist.")
    return [System.Management.Automation.ErrorRecord]::new($e, 'PathNotFound', 'ObjectNotFound', $Key)
}
# Keys Administrators may only read (registry_acl in the state, fakewin.py
# init: CCG's COMClasses, owned by TrustedInstaller): the security record
# nearest KEY (itself or a key above it) rules a write; [WbRegOwner]
# (winhost.cs) changes a record as Take/Restore do on Windows.
function global:Wb-RegAclOf([hashtable]$St, [string]$Key) {
    if ($null -eq $St.registry_acl) { return $null }
    $l = $Key.ToLowerInvariant()
    while ($l -match '\\') {
        if ($St.registry_acl.ContainsKey($l)) { return $St.registry_acl[$l] }
        $l = $l.Substring(0, $l.LastIndexOf('\'))
    }
    return $null
}
function global:Wb-RegCheckWrite([hashtable]$St, [string]$Key) {
    $acl = Wb-RegAclOf $St $Key
    if ($null -ne $acl -and $acl.admins -ne 'full') {
        throw [System.Security.SecurityException]::new("Requested registry access is not allowed. ($Key, owned by $($acl.owner))")
    }
    return $acl
}
function global:Wb-RegSet([string]$Key, [string]$Name, $Value, [string]$Type, [bool]$KeepType) {
    $st = Wb-Load
    $l = $Key.ToLowerInvariant()
    if (-not (Wb-KeyExists $st $Key)) { throw (Wb-RegNotFound $Key) }
    $null = Wb-RegCheckWrite $st $Key
    if (-not $st.registry.ContainsKey($l)) { $st.registry[$l] = @{ path = $Key; values = @{} } }
    $old = $st.registry[$l].values[$Name.ToLowerInvariant()]
    if ($Type -eq '') {
        if ($KeepType -and $null -ne $old) { $Type = $old.type }
        elseif ($Value -is [int] -or $Value -is [long]) { $Type = 'DWord' }
        else { $Type = 'String' }
    }
    $valid = @('String', 'ExpandString', 'Binary', 'DWord', 'MultiString', 'QWord')
    if ($valid -notcontains $Type) { throw "registry value type '$Type' is not one of $($valid -join ', ')" }
    # RegistryKey.SetValue (.NET's RegistryKey.cs): a DWord is
    # Convert.ToInt32(value), a QWord Convert.ToInt64(value): 4294967295 as
    # an Int64 overflows and throws; the script passes the Int32 whose bits
    # are the value, and reading it back gives that Int32 (-1 for 0xffffffff)
    if ($Type -eq 'DWord') { $Value = [long][Convert]::ToInt32($Value, [Globalization.CultureInfo]::InvariantCulture) }
    elseif ($Type -eq 'QWord') { $Value = [Convert]::ToInt64($Value, [Globalization.CultureInfo]::InvariantCulture) }
    elseif ($Type -eq 'MultiString') { $Value = @($Value | ForEach-Object { "$_" }) }
    elseif ($Type -eq 'Binary') {
        # REG_BINARY takes a byte[]: kept as lower-case hex
        if ($Value -isnot [byte[]]) { throw "a Binary registry value takes a byte[], not $($Value.GetType().Name)" }
        $Value = ($Value | ForEach-Object { '{0:x2}' -f $_ }) -join ''
    }
    else { $Value = "$Value" }
    $st.registry[$l].values[$Name.ToLowerInvariant()] = @{ name = $Name; type = $Type; value = $Value }
    Wb-Save $st
}

# ---- proxies of cmdlets pwsh has (tests/win/proxies.ps1, built by packer.ps1) ----
# the registry path a call names, or $null
function global:Wb-RegArg([hashtable]$Bound) {
    foreach ($k in @('LiteralPath', 'Path')) {
        if ($Bound.ContainsKey($k)) {
            $p = @($Bound[$k])
            if ($p.Count -eq 1 -and (Wb-IsReg $p[0])) { return (Wb-RegKey $p[0]) }
            foreach ($x in $p) { if (Wb-IsReg $x) { throw "simulated registry: one key per call ($($p -join ', '))" } }
        }
    }
    return $null
}

# ---- named pipes: \\.\pipe\NAME exists while the service serving it runs ----
# (containerd serves containerd-containerd once started: its config.toml's
# [grpc] address, recipes/templates/containerd/)
$global:WbPipes = @{ 'containerd-containerd' = 'containerd' }
function global:Wb-PipeArg([hashtable]$Bound) {
    foreach ($k in @('LiteralPath', 'Path')) {
        if ($Bound.ContainsKey($k) -and @($Bound[$k]).Count -eq 1 -and "$(@($Bound[$k])[0])" -match '^[\\/]{2}\.[\\/]pipe[\\/](.+)$') {
            return $Matches[1]
        }
    }
    return $null
}
function global:Wb-PipeExists([hashtable]$St, [string]$Pipe) {
    $svc = $WbPipes[$Pipe]
    if ($null -eq $svc) { return $false }
    $s = $St.services[$svc]
    if ($null -eq $s -or $s.status -ne 'Running') { return $false }
    # a service just started serves its pipe a moment later: the first
    # two looks after Start-Service find none
    if ($s.ContainsKey('pipe_wait') -and $s.pipe_wait -gt 0) {
        $s.pipe_wait = [int]$s.pipe_wait - 1
        Wb-Save $St
        return $false
    }
    return $true
}

# ---- Windows-only cmdlets: parameter sets as documented on learn.microsoft.com ----
# Start-Service / Stop-Service: by -Name (the scripts' form); each change is
# logged in service_events with the status it found, for tests/win/check.py
function global:Wb-ServiceOrError([hashtable]$St, [string]$N) {
    $s = $St.services[$N.ToLowerInvariant()]
    if ($null -eq $s -or $s.pendingDelete -gt 0) {
        throw [System.InvalidOperationException]::new("Cannot find any service with service name '$N'.")
    }
    return $s
}
# service S to STATUS, logged (verb, name, the status it had) when it changes
function global:Wb-ServiceTo([hashtable]$St, $S, [string]$Status) {
    if ($S.status -eq $Status) { return }
    $verb = if ($Status -eq 'Running') { 'start' } else { 'stop' }
    $St.service_events += @(@{ verb = $verb; name = $S.name; was = $S.status })
    $S.status = $Status
    if ($Status -eq 'Running' -and $WbPipes.Values -contains $S.name) { $S.pipe_wait = 2 }
}
function global:Start-Service {
    [CmdletBinding(DefaultParameterSetName = 'Default', SupportsShouldProcess = $true)]
    param(
        [Parameter(ParameterSetName = 'Default', Mandatory = $true, Position = 0, ValueFromPipelineByPropertyName = $true)]
        [Alias('ServiceName')][string[]]$Name,
        [Parameter(ParameterSetName = 'DisplayName', Mandatory = $true)][string[]]$DisplayName,
        [Parameter(ParameterSetName = 'InputObject', Mandatory = $true, Position = 0, ValueFromPipeline = $true)]$InputObject,
        [switch]$PassThru,
        [string[]]$Include,
        [string[]]$Exclude
    )
    if ($PSCmdlet.ParameterSetName -ne 'Default') { throw 'simulated Start-Service: only -Name is modelled' }
    $st = Wb-Load
    foreach ($n in $Name) {
        $s = Wb-ServiceOrError $st $n
        if ($s.start -eq 'disabled') {
            throw [System.InvalidOperationException]::new("Service '$n ($n)' cannot be started due to the following error: Cannot start service $n on computer '.'.")
        }
        # what it depends on starts first, as the service control manager does
        foreach ($d in @($s.depend)) {
            Wb-ServiceTo $st (Wb-ServiceOrError $st $d) 'Running'
        }
        Wb-ServiceTo $st $s 'Running'
    }
    Wb-Save $st
}
function global:Stop-Service {
    [CmdletBinding(DefaultParameterSetName = 'Default', SupportsShouldProcess = $true)]
    param(
        [Parameter(ParameterSetName = 'Default', Mandatory = $true, Position = 0, ValueFromPipelineByPropertyName = $true)]
        [Alias('ServiceName')][string[]]$Name,
        [Parameter(ParameterSetName = 'DisplayName', Mandatory = $true)][string[]]$DisplayName,
        [Parameter(ParameterSetName = 'InputObject', Mandatory = $true, Position = 0, ValueFromPipeline = $true)]$InputObject,
        [switch]$Force,
        [switch]$NoWait,
        [switch]$PassThru,
        [string[]]$Include,
        [string[]]$Exclude
    )
    if ($PSCmdlet.ParameterSetName -ne 'Default') { throw 'simulated Stop-Service: only -Name is modelled' }
    $st = Wb-Load
    foreach ($n in $Name) {
        $s = Wb-ServiceOrError $st $n
        $running = @($st.services.Values | Where-Object { $_.status -eq 'Running' -and @($_.depend) -contains $s.name })
        if ($running.Count -gt 0 -and -not $Force) {
            throw [System.InvalidOperationException]::new("Cannot stop service '$n ($n)' because it has dependent services. It can only be stopped if the Force flag is set.")
        }
        foreach ($d in $running) {
            Wb-ServiceTo $st $d 'Stopped'
        }
        Wb-ServiceTo $st $s 'Stopped'
    }
    Wb-Save $st
}

function global:Get-Service {
    [CmdletBinding(DefaultParameterSetName = 'Default')]
    param(
        [Parameter(ParameterSetName = 'Default', Position = 0, ValueFromPipeline = $true, ValueFromPipelineByPropertyName = $true)]
        [Alias('ServiceName')][string[]]$Name,
        [switch]$DependentServices,
        [Alias('ServicesDependedOn')][switch]$RequiredServices,
        [Parameter(ParameterSetName = 'DisplayName', Mandatory = $true)][string[]]$DisplayName,
        [string[]]$Include,
        [string[]]$Exclude,
        [Parameter(ParameterSetName = 'InputObject', ValueFromPipeline = $true)]$InputObject
    )
    $st = Wb-Load
    $changed = $false
    foreach ($n in @($Name)) {
        $s = $st.services[$n.ToLowerInvariant()]
        if ($null -eq $s) {
            $e = [System.InvalidOperationException]::new("Cannot find any service with service name '$n'.")
            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($e, 'NoServiceFoundForGivenName', 'ObjectNotFound', $n))
            continue
        }
        if ($s.pendingDelete -gt 0) {
            # marked for deletion: gone once the last handle closes
            $s.pendingDelete = [int]$s.pendingDelete - 1
            $changed = $true
            if ($s.pendingDelete -eq 0) {
                $st.services.Remove($n.ToLowerInvariant())
            }
        }
        [pscustomobject]@{ Name = $s.name; ServiceName = $s.name; Status = $s.status
            StartType = @{ auto = 'Automatic'; 'delayed-auto' = 'Automatic'; demand = 'Manual'; disabled = 'Disabled' }[$s.start] }
    }
    if ($changed) { Wb-Save $st }
}

function global:Get-WindowsFeature {
    [CmdletBinding()]
    param(
        [Parameter(Position = 0, ValueFromPipeline = $true)][string[]]$Name,
        [string]$Vhd,
        [string]$ComputerName,
        [pscredential]$Credential,
        [string]$LogPath
    )
    $st = Wb-Load
    foreach ($n in @($Name)) {
        $f = $st.features[$n]
        if ($null -eq $f) { continue }
        [pscustomobject]@{ Name = $n; Installed = [bool]$f.installed
            InstallState = if ($f.installed) { 'Installed' } elseif ($f.pending) { 'InstallPending' } else { 'Available' } }
    }
}

function global:Install-WindowsFeature {
    [CmdletBinding(SupportsShouldProcess = $true)]
    param(
        [Parameter(Mandatory = $true, Position = 0, ValueFromPipeline = $true)][string[]]$Name,
        [switch]$Restart,
        [switch]$IncludeAllSubFeature,
        [switch]$IncludeManagementTools,
        [string]$Source,
        [string]$Vhd,
        [string]$ComputerName,
        [pscredential]$Credential,
        [string]$LogPath,
        [string]$ConfigurationFilePath
    )
    $st = Wb-Load
    foreach ($n in $Name) {
        if (-not $st.features.ContainsKey($n)) { throw "ArgumentNotValid: The role, role service, or feature name is not valid: '$n'." }
        if (-not $st.features[$n].installed) {
            $st.features[$n].pending = $true
            $st.pending_restart = $true
        }
    }
    Wb-Save $st
    return [pscustomobject]@{ Success = $true; RestartNeeded = 'Yes'; ExitCode = 'SuccessRestartRequired'; FeatureResult = @($Name) }
}

function global:Get-NetFirewallRule {
    [CmdletBinding()]
    param(
        [Parameter(Position = 0)][Alias('ID')][string[]]$Name,
        [string[]]$DisplayName,
        [switch]$All,
        [string[]]$PolicyStore
    )
    $st = Wb-Load
    if ($PSBoundParameters.ContainsKey('DisplayName')) {
        foreach ($d in @($DisplayName)) {
            $hits = @($st.firewall.Values | Where-Object { $_.DisplayName -eq $d })
            if ($hits.Count -eq 0) {
                $e = [System.Management.Automation.ItemNotFoundException]::new("No MSFT_NetFirewallRule objects found with property 'DisplayName' equal to '$d'.")
                $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($e, 'CmdletizationQuery_NotFound_DisplayName,Get-NetFirewallRule', 'ObjectNotFound', $d))
            }
            foreach ($r in $hits) { [pscustomobject]$r }
        }
        return
    }
    foreach ($n in @($Name)) {
        $r = $st.firewall[$n]
        if ($null -eq $r) {
            $e = [System.Management.Automation.ItemNotFoundException]::new("No MSFT_NetFirewallRule objects found with property 'InstanceID' equal to '$n'.")
            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($e, 'CmdletizationQuery_NotFound_InstanceID,Get-NetFirewallRule', 'ObjectNotFound', $n))
            continue
        }
        [pscustomobject]$r
    }
}

function global:Remove-NetFirewallRule {
    [CmdletBinding(SupportsShouldProcess = $true)]
    param(
        [Parameter(Position = 0)][Alias('ID')][string[]]$Name,
        [string[]]$DisplayName,
        [string[]]$PolicyStore
    )
    $st = Wb-Load
    foreach ($n in @($Name)) {
        if (-not $st.firewall.ContainsKey($n)) { throw "No MSFT_NetFirewallRule objects found with property 'InstanceID' equal to '$n'." }
        $st.firewall.Remove($n)
    }
    Wb-Save $st
}

function global:New-NetFirewallRule {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$DisplayName,
        [Alias('ID')][string]$Name,
        [string]$Description,
        [string]$Group,
        [ValidateSet('True', 'False')][string]$Enabled = 'True',
        [string[]]$Profile = @('Any'),
        [ValidateSet('Inbound', 'Outbound')][string]$Direction = 'Inbound',
        [ValidateSet('NotConfigured', 'Allow', 'Block')][string]$Action = 'Allow',
        [string]$Protocol = 'Any',
        [string[]]$LocalPort,
        [string[]]$RemotePort,
        [string[]]$LocalAddress,
        [string[]]$RemoteAddress,
        [string]$Program,
        [string]$Service,
        [string]$LocalUser,
        [string]$RemoteUser,
        [string]$PolicyStore
    )
    $st = Wb-Load
    if ($Name -eq '') { $Name = [guid]::NewGuid().ToString('B') }
    if ($st.firewall.ContainsKey($Name)) { throw "Cannot create a file when that file already exists. (firewall rule '$Name')" }
    if ($Protocol -notmatch '^(TCP|UDP|ICMPv4|ICMPv6|Any|\d+)$') { throw "The protocol '$Protocol' is not valid" }
    foreach ($p in @($LocalPort) + @($RemotePort)) { if ($null -ne $p -and "$p" -notmatch '^(\d+(-\d+)?|Any|RPC|RPCEPMap)$') { throw "The port '$p' is not valid" } }
    foreach ($a in @($RemoteAddress)) { if ($null -ne $a -and -not [System.Net.IPAddress]::TryParse("$a", [ref]$null)) { throw "The address '$a' is not valid" } }
    # -LocalUser is an SDDL string (O:, D: and ACEs); Windows refuses others
    if ($LocalUser -ne '' -and $LocalUser -notmatch '^O:[A-Z]{2}D:(\([ADU];;CC;;;S-1-[0-9-]+\))+$') { throw "The SDDL '$LocalUser' is not valid" }
    $st.firewall[$Name] = [ordered]@{ Name = $Name; DisplayName = $DisplayName; Direction = $Direction; Action = $Action
        Protocol = $Protocol; LocalPort = @($LocalPort | ForEach-Object { "$_" }); Enabled = $Enabled; Profile = @($Profile)
        RemoteAddress = @($RemoteAddress | ForEach-Object { "$_" }); RemotePort = @($RemotePort | ForEach-Object { "$_" }); LocalUser = $LocalUser }
    Wb-Save $st
    return [pscustomobject]$st.firewall[$Name]
}

# Microsoft.PowerShell.LocalAccounts (Windows only): the documented
# parameters; a missing name is ObjectNotFound (UserNotFound/GroupNotFound)
function global:Get-LocalUser {
    [CmdletBinding()]
    param([Parameter(Position = 0)][string[]]$Name, [string[]]$SID)
    $st = Wb-Load
    foreach ($n in @($Name)) {
        $u = $st.users[$n.ToLowerInvariant()]
        if ($null -eq $u) {
            $e = [System.Management.Automation.ItemNotFoundException]::new("User $n was not found.")
            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($e, 'UserNotFound,Microsoft.PowerShell.Commands.GetLocalUserCommand', 'ObjectNotFound', $n))
            continue
        }
        [pscustomobject]@{ Name = $u.Name; Enabled = $u.Enabled; SID = [pscustomobject]@{ Value = $u.SID } }
    }
}

function global:Disable-LocalUser {
    [CmdletBinding(SupportsShouldProcess = $true)]
    param([Parameter(Position = 0)][string[]]$Name, [Parameter(ValueFromPipeline = $true)][object[]]$InputObject, [string[]]$SID)
    $st = Wb-Load
    foreach ($n in @($Name)) {
        $u = $st.users[$n.ToLowerInvariant()]
        if ($null -eq $u) { throw "User $n was not found." }
        $u.Enabled = $false
    }
    Wb-Save $st
}

function global:Get-LocalGroup {
    [CmdletBinding()]
    param([Parameter(Position = 0)][string[]]$Name, [string[]]$SID)
    $st = Wb-Load
    foreach ($n in @($Name)) {
        $g = $st.groups[$n.ToLowerInvariant()]
        if ($null -eq $g) {
            $e = [System.Management.Automation.ItemNotFoundException]::new("Group $n was not found.")
            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($e, 'GroupNotFound,Microsoft.PowerShell.Commands.GetLocalGroupCommand', 'ObjectNotFound', $n))
            continue
        }
        [pscustomobject]@{ Name = $g.Name; Description = $g.Description; SID = [pscustomobject]@{ Value = $g.SID } }
    }
}

function global:New-LocalGroup {
    [CmdletBinding(SupportsShouldProcess = $true)]
    param([Parameter(Mandatory = $true, Position = 0)][string]$Name, [string]$Description)
    $st = Wb-Load
    if ($st.groups.ContainsKey($Name.ToLowerInvariant())) { throw "Group $Name already exists." }
    $sid = 'S-1-5-21-1004336348-1177238915-682003330-' + (1000 + $st.groups.Count)
    $st.groups[$Name.ToLowerInvariant()] = [ordered]@{ Name = $Name; Description = $Description; SID = $sid }
    Wb-Save $st
    return [pscustomobject]@{ Name = $Name; Description = $Description; SID = [pscustomobject]@{ Value = $sid } }
}

# Get-HotFix (Windows only; Microsoft.PowerShell.Management in 5.1): its
# documented parameters; the objects carry Win32_QuickFixEngineering's
# HotFixID, Description, InstalledOn (Microsoft Learn win32/cimwin32prov/
# win32-quickfixengineering: only updates Component Based Servicing
# supplied). Listed: each package fakewin.py's dism.exe holds installed
# (state 'installed'); one that waits for its restart is not (unsourced:
# 09-updates never asks while one waits, DISM says 0x800f082f first). An
# -Id nobody has is a non-terminating error, as on Windows.
function global:Get-HotFix {
    [CmdletBinding(DefaultParameterSetName = 'Default')]
    param(
        [Parameter(ParameterSetName = 'Default', Position = 0)][string[]]$Id,
        [Parameter(ParameterSetName = 'Description')][string[]]$Description,
        [string[]]$ComputerName,
        [pscredential]$Credential
    )
    $st = Wb-Load
    $all = @(foreach ($kb in @($st.packages.Keys | Sort-Object)) {
        if ($st.packages[$kb].state -eq 'installed') {
            [pscustomobject]@{ Source = 'WIN-SIM'; Description = 'Update'; HotFixID = $kb
                InstalledBy = 'NT AUTHORITY\SYSTEM'; InstalledOn = [datetime]'2026-01-01' }
        }
    })
    if ($null -eq $Id) { return $all }
    foreach ($i in $Id) {
        $hit = @($all | Where-Object { $_.HotFixID -eq $i })
        if ($hit.Count -eq 0) {
            $e = [System.ArgumentException]::new("Cannot find the requested hotfix on the 'localhost' computer.")
            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new($e, 'GetHotFixNoEntriesFound,Microsoft.PowerShell.Commands.GetHotFixCommand', 'ObjectNotFound', $i))
            continue
        }
        $hit
    }
}

function global:Get-MpPreference {
    [CmdletBinding()]
    param()
    $st = Wb-Load
    $ex = @($st.defender.ExclusionPath)
    return [pscustomobject]@{ ExclusionPath = if ($ex.Count -gt 0) { [string[]]$ex } else { $null } }
}

function global:Add-MpPreference {
    [CmdletBinding()]
    param(
        [string[]]$ExclusionPath,
        [string[]]$ExclusionExtension,
        [string[]]$ExclusionProcess,
        [string[]]$ExclusionIpAddress,
        [switch]$Force
    )
    $st = Wb-Load
    $have = [System.Collections.Generic.List[string]]::new()
    foreach ($x in @($st.defender.ExclusionPath)) { $have.Add($x) }
    foreach ($x in @($ExclusionPath)) { if ($x -and -not $have.Contains($x)) { $have.Add($x) } }
    $st.defender.ExclusionPath = @($have)
    Wb-Save $st
}

function global:Get-CimInstance {
    [CmdletBinding(DefaultParameterSetName = 'ClassNameComputerSet')]
    param(
        [Parameter(ParameterSetName = 'ClassNameComputerSet', Mandatory = $true, Position = 0)][string]$ClassName,
        [Parameter(ParameterSetName = 'QuerySessionSet', Mandatory = $true)][string]$Query,
        [string]$Filter,
        [string]$Namespace,
        [string[]]$Property,
        [string[]]$ComputerName,
        [uint32]$OperationTimeoutSec,
        [switch]$Shallow
    )
    if ($ClassName -ne 'Win32_LogicalDisk') { throw "simulated CIM: class '$ClassName' is not modelled" }
    $disks = @([pscustomobject]@{ DeviceID = 'C:'; DriveType = 3; VolumeName = '' })
    if ("$env:WBSIM_CD" -ne '') {
        $disks += [pscustomobject]@{ DeviceID = 'E:'; DriveType = 5; VolumeName = ($env:WBSIM_CD -split '\|', 2)[1] }
    }
    if ($Filter -eq '') { return $disks }
    if ($Filter -notmatch '^\s*DriveType\s*=\s*(\d+)\s*$') { throw "simulated CIM: filter '$Filter' is not modelled" }
    $t = [int]$Matches[1]
    return @($disks | Where-Object { $_.DriveType -eq $t })
}

# [ADSI]"WinNT://HOST/Administrator,user": WbAdsiUser (tests/win/winhost.cs)
$accel = [psobject].Assembly.GetType('System.Management.Automation.TypeAccelerators')
if (-not $accel::Get.ContainsKey('ADSI')) { $accel::Add('ADSI', [WbAdsiUser]) }
