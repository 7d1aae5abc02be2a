# Proxies of the cmdlets pwsh has that the simulated Windows changes
# (tests/win/sim.ps1): the body handles HKLM: (the registry model) or Windows
# paths and passes the rest to the real cmdlet ($real). packer.ps1 builds
# each once per run from the real cmdlet's parameter metadata (so a
# misspelt parameter fails as it would on Windows) and every runspace
# dot-sources the result.
# Output: one @{ Name; Body; Extra } per proxy.
function Wb-Proxy([string]$Name, [string]$Body, [hashtable]$Extra = @{}) {
    @{ Name = $Name; Body = $Body; Extra = $Extra }
}

Wb-Proxy 'Test-Path' @'
$lp = if ($PSBoundParameters.ContainsKey('LiteralPath')) { "$LiteralPath" } else { "$Path" }
if ($lp -match '^Cert:\\LocalMachine\\My\\([0-9A-Fa-f]+)$') { return (@((Wb-Load).certificates) -contains $Matches[1]) }
$pipe = Wb-PipeArg $PSBoundParameters
if ($null -ne $pipe) { return (Wb-PipeExists (Wb-Load) $pipe) }
$key = Wb-RegArg $PSBoundParameters
if ($null -eq $key) { return (& $real @PSBoundParameters) }
if ($PSBoundParameters['PathType'] -eq 'Leaf') { return $false }
return (Wb-KeyExists (Wb-Load) $key)
'@

Wb-Proxy 'New-Item' @'
$key = Wb-RegArg $PSBoundParameters
if ($null -eq $key) { return (& $real @PSBoundParameters) }
$st = Wb-Load
$l = $key.ToLowerInvariant()
if ($st.registry.ContainsKey($l) -and -not $Force) { throw "A key at this path already exists: $key" }
if (-not $st.registry.ContainsKey($l)) {
    # creating a subkey writes the key above; the new key inherits what is
    # inheritable there (Administrators' full control while it is taken)
    $acl = Wb-RegCheckWrite $st $key.Substring(0, $key.LastIndexOf('\'))
    if ($null -ne $acl -and $acl.inherit -and -not $st.registry_acl.ContainsKey($l)) {
        $st.registry_acl[$l] = @{ path = $key; owner = 'Administrators'; admins = $acl.admins; inherit = $true }
    }
    $st.registry[$l] = @{ path = $key; values = @{} }
}
Wb-Save $st
return [pscustomobject]@{ PSPath = $key; Name = ($key -split '\\')[-1] }
'@

Wb-Proxy 'New-ItemProperty' @'
$key = Wb-RegArg $PSBoundParameters
if ($null -eq $key) { return (& $real @PSBoundParameters) }
$st = Wb-Load
$old = (Wb-Values $st $key)[$Name.ToLowerInvariant()]
if ($null -ne $old -and -not $Force) { throw "The property already exists: $Name" }
$type = if ($PSBoundParameters.ContainsKey('PropertyType')) { $PropertyType } else { 'String' }
Wb-RegSet $key $Name $Value $type $false
return [pscustomobject]@{ $Name = $Value }
'@

Wb-Proxy 'Set-ItemProperty' @'
$key = Wb-RegArg $PSBoundParameters
if ($null -eq $key) { return (& $real @PSBoundParameters) }
$type = if ($PSBoundParameters.ContainsKey('Type')) { $Type } else { '' }
Wb-RegSet $key $Name $Value $type $true
'@ @{ Type = [string] }

Wb-Proxy 'Remove-ItemProperty' @'
$key = Wb-RegArg $PSBoundParameters
if ($null -eq $key) { return (& $real @PSBoundParameters) }
$st = Wb-Load
$r = $st.registry[$key.ToLowerInvariant()]
foreach ($n in $Name) {
    if ($null -eq $r -or -not $r.values.ContainsKey($n.ToLowerInvariant())) {
        $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
            [System.Management.Automation.PSArgumentException]::new("Property $n does not exist at path $key."),
            'System.Management.Automation.PSArgumentException', 'InvalidArgument', $n))
        continue
    }
    $r.values.Remove($n.ToLowerInvariant())
}
Wb-Save $st
'@

Wb-Proxy 'Get-ItemProperty' @'
$key = Wb-RegArg $PSBoundParameters
if ($null -eq $key) { return (& $real @PSBoundParameters) }
$st = Wb-Load
if (-not (Wb-KeyExists $st $key)) { $PSCmdlet.WriteError((Wb-RegNotFound $key)); return }
$vals = Wb-Values $st $key
$o = [ordered]@{}
foreach ($v in $vals.Values) {
    if ($PSBoundParameters.ContainsKey('Name') -and @($Name) -notcontains $v.name) { continue }
    $o[$v.name] = if ($v.type -eq 'ExpandString') { Wb-Expand $v.value } else { $v.value }
}
if ($PSBoundParameters.ContainsKey('Name')) {
    foreach ($n in $Name) {
        if (-not $vals.Contains($n.ToLowerInvariant())) {
            $PSCmdlet.WriteError([System.Management.Automation.ErrorRecord]::new(
                [System.Management.Automation.PSArgumentException]::new("Property $n does not exist at path $key."),
                'System.Management.Automation.PSArgumentException', 'InvalidArgument', $n))
            return
        }
    }
}
$o['PSPath'] = $key
return [pscustomobject]$o
'@

Wb-Proxy 'Get-Item' @'
$key = Wb-RegArg $PSBoundParameters
if ($null -eq $key) { return (& $real @PSBoundParameters) }
$st = Wb-Load
if (-not (Wb-KeyExists $st $key)) { $PSCmdlet.WriteError((Wb-RegNotFound $key)); return }
$vals = Wb-Values $st $key
$o = [pscustomobject]@{ Name = $key; Property = @($vals.Values | ForEach-Object { $_.name }) }
$o | Add-Member -MemberType NoteProperty -Name WbValues -Value $vals
# RegistryKey.GetValue(name, default, options): REG_EXPAND_SZ expanded unless
# RegistryValueOptions.DoNotExpandEnvironmentNames
$o | Add-Member -MemberType ScriptMethod -Name GetValue -Value {
    param([string]$N, $Default = $null, $Options = 'None')
    $v = $this.WbValues[$N.ToLowerInvariant()]
    if ($null -eq $v) { return $Default }
    if ($v.type -eq 'ExpandString' -and "$Options" -ne 'DoNotExpandEnvironmentNames') { return (Wb-Expand $v.value) }
    return $v.value
}
$o | Add-Member -MemberType ScriptMethod -Name GetValueKind -Value {
    param([string]$N)
    return $this.WbValues[$N.ToLowerInvariant()].type
}
return $o
'@

# Add-Type of 05-services.ps1's WbRegOwner (take_ownership): the C# is
# compiled as it is, under another name (it must build; its advapi32 calls
# cannot run here), and [WbRegOwner] stays the simulated one of winhost.cs
Wb-Proxy 'Add-Type' @'
if ($PSBoundParameters.ContainsKey('TypeDefinition') -and $TypeDefinition -match 'public static class WbRegOwner\b') {
    $PSBoundParameters['TypeDefinition'] = $TypeDefinition -replace '\bWbRegOwner\b', 'WbRegOwnerWindows'
    & $real @PSBoundParameters
    [IO.File]::AppendAllText([IO.Path]::Combine($env:WBSIM_ROOT, '..', 'addtype.log'), "WbRegOwner compiled`n")
    return
}
return (& $real @PSBoundParameters)
'@

# Windows paths stay Windows paths: the FileSystem provider on Linux answers
# 'C:/a/b'; Windows answers 'C:\a\b' (and that string reaches native programs)
foreach ($n in @('Join-Path', 'Split-Path')) {
    Wb-Proxy $n @'
foreach ($r in @(& $real @PSBoundParameters)) {
    if ($r -is [string] -and $r -match '^[A-Za-z]:') { $r.Replace('/', '\') } else { $r }
}
'@
}

Wb-Proxy 'Start-Sleep' @'
$st = Wb-Load
$st.sleeps = [int]$st.sleeps + 1
Wb-Save $st
'@

Wb-Proxy 'Invoke-WebRequest' @'
$st = Wb-Load
$src = $null
if ($st.ContainsKey('web')) { $src = $st.web["$Uri"] }
if ($null -eq $src) { throw "simulated network: nothing at $Uri" }
if (-not $PSBoundParameters.ContainsKey('OutFile')) { throw 'simulated network: only -OutFile is modelled' }
Microsoft.PowerShell.Management\Copy-Item -LiteralPath $src -Destination $OutFile -Force
'@


# The WSMan: drive (WinRM's configuration, Windows only): what the ISO
# builders' sysprep step changes (D19). State: winrm.basic, winrm.listeners
# (name -> Keys), set up by fakewin.py init as the answer file leaves them.
Wb-Proxy 'Set-Item' @'
if ("$Path" -notmatch '^WSMan:') { return (& $real @PSBoundParameters) }
if ("$Path" -ne 'WSMan:\localhost\Service\Auth\Basic') { throw "simulated WSMan: '$Path' is not modelled" }
$st = Wb-Load
$st.winrm.basic = [bool]::Parse("$Value")
Wb-Save $st
'@

Wb-Proxy 'Get-ChildItem' @'
if ("$Path" -match '^Microsoft\.WSMan\.Management\\WSMan::localhost\\Listener\\(Listener_[0-9]+)$') {
    # a listener's items (issue 40: firstboot-winrm.ps1 reads the HTTPS
    # listener's CertificateThumbprint to remove its certificate)
    $st = Wb-Load
    $l = $Matches[1]
    if (-not $st.winrm.listeners.ContainsKey($l)) { throw "simulated WSMan: no listener $l" }
    $t = ''
    if ($st.winrm.ContainsKey('certificates') -and $st.winrm.certificates.ContainsKey($l)) { $t = $st.winrm.certificates[$l] }
    foreach ($kv in @($st.winrm.listeners[$l])) {
        $n, $v = "$kv" -split '=', 2
        [pscustomobject]@{ Name = $n; Value = $v }
    }
    return [pscustomobject]@{ Name = 'CertificateThumbprint'; Value = $t }
}
if ("$Path" -notmatch '^WSMan:') { return (& $real @PSBoundParameters) }
if ("$Path" -ne 'WSMan:\localhost\Listener') { throw "simulated WSMan: '$Path' is not modelled" }
$st = Wb-Load
foreach ($k in @($st.winrm.listeners.Keys | Sort-Object)) {
    [pscustomobject]@{ Name = $k; Keys = [string[]]$st.winrm.listeners[$k]
        PSPath = "Microsoft.WSMan.Management\WSMan::localhost\Listener\$k" }
}
'@

Wb-Proxy 'Remove-Item' @'
$p = if ($PSBoundParameters.ContainsKey('Path')) { "$Path" } else { "$LiteralPath" }
if ($p -match '^Cert:\\LocalMachine\\My\\([0-9A-Fa-f]+)$') {
    $st = Wb-Load
    if (@($st.certificates) -notcontains $Matches[1]) { throw "Cannot find path '$p' because it does not exist." }
    $st.certificates = @($st.certificates | Where-Object { $_ -ne $Matches[1] })
    Wb-Save $st
    return
}
if ($p -notmatch '^(WSMan:|Microsoft\.WSMan\.Management\\WSMan::)') { return (& $real @PSBoundParameters) }
if ($p -notmatch '\\Listener\\(Listener_[0-9]+)$') { throw "simulated WSMan: '$p' is not modelled" }
$st = Wb-Load
if (-not $st.winrm.listeners.ContainsKey($Matches[1])) { throw "simulated WSMan: no listener $($Matches[1])" }
$st.winrm.listeners.Remove($Matches[1])
Wb-Save $st
'@
