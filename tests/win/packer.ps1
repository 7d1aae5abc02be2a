# The engine tier's Packer: runs the build block of an emitted template
# (the plan tests/win/hclplan.cjs read from it) against a simulated Windows,
# the way Packer's provisioners run it (hashicorp/packer
# provisioner/powershell/provisioner.go, provisioner/windows-restart,
# provisioner/file), for each builder given, PASSES times on the same machine.
#
# usage: pwsh -NoProfile -File packer.ps1 -PlanFile PLAN.json -Work DIR
#            -WindowsVersion 2022 -Builders qemu,azure-arm [-Passes 2]
# For each builder: DIR/<builder>/{C/, state.json, arglog.jsonl, pass<N>.json,
# log.txt}. Prints one line per step; exit 0 when every step of every pass
# of every builder exited with one of its valid_exit_codes, 1 otherwise.
#
# Where this differs from a Windows build VM (docs/node.md, "The engine
# tier"): powershell.exe is a fresh runspace of this process per script
# (same isolation of variables, functions and environment; one process is
# ~1 s of start-up saved per script); `exit N` reaches the host's
# SetShouldExit (tests/win/winhost.cs) as powershell.exe's exit status.
param(
    [Parameter(Mandatory = $true)][string]$PlanFile,
    [Parameter(Mandatory = $true)][string]$Work,
    [Parameter(Mandatory = $true)][string]$WindowsVersion,
    [Parameter(Mandatory = $true)][string[]]$Builders,
    [int]$Passes = 2,
    # run on the machine an earlier run left in -Work (a build with other
    # options on the same VM) instead of a fresh one
    [switch]$Keep,
    # URL=FILE: what the simulated network serves (packer.payload: pull)
    [string[]]$Web = @()
)
$ErrorActionPreference = 'Stop'
# -File hands "a,b" over as one string
$Builders = @($Builders | ForEach-Object { $_ -split ',' } | Where-Object { $_ -ne '' })
Set-StrictMode -Version Latest

$here = $PSScriptRoot
# The host (tests/win/winhost.cs): Add-Type -Path X.cs runs Roslyn in this
# process, 2 to 13 CPU seconds per start on the 2-core CI machine, where
# loading the compiled DLL costs 50 ms. With WINTIER_CACHE (a directory the
# caller owns: tests/win/run's work dir, an engine-tier bats file's
# BATS_FILE_TMPDIR) it is compiled once there, named by the source's SHA-256
# and this pwsh's version, written in a directory of this process's and
# renamed (two builds compiling at once both end with a whole DLL);
# without it, compiled in memory as before.
$hostSrc = Join-Path $here 'winhost.cs'
if ("$env:WINTIER_CACHE" -ne '') {
    $key = "$((Get-FileHash -Algorithm SHA256 -LiteralPath $hostSrc).Hash)-$($PSVersionTable.PSVersion)"
    $dll = Join-Path $env:WINTIER_CACHE "winhost-$key.dll"
    if (-not (Test-Path -LiteralPath $dll)) {
        $tmpDir = Join-Path $env:WINTIER_CACHE "compile.$PID"
        New-Item -ItemType Directory -Force -Path $tmpDir | Out-Null
        $tmp = Join-Path $tmpDir 'winhost.dll'
        Add-Type -Path $hostSrc -OutputAssembly $tmp -OutputType Library
        [IO.File]::Move($tmp, $dll, $true)
        Remove-Item -LiteralPath $tmpDir -Recurse -Force
    }
    $null = [Reflection.Assembly]::LoadFrom($dll)
} else {
    Add-Type -Path $hostSrc
}
$tpl = Get-Content -Raw -LiteralPath $PlanFile | ConvertFrom-Json
# The simulated Windows every runspace dot-sources: sim.ps1 plus the proxies
# of tests/win/proxies.ps1, built once here from the real cmdlets' parameter
# metadata (a runspace then only runs a cached, parsed file)
function New-ProxyText($def) {
    $real = Get-Command -Name $def.Name -CommandType Cmdlet
    $md = [System.Management.Automation.CommandMetadata]::new($real)
    foreach ($p in $def.Extra.Keys) {
        $md.Parameters[$p] = [System.Management.Automation.ParameterMetadata]::new($p, $def.Extra[$p])
    }
    $binding = [System.Management.Automation.ProxyCommand]::GetCmdletBindingAttribute($md)
    $params = [System.Management.Automation.ProxyCommand]::GetParamBlock($md)
    return "function global:$($def.Name) {`n$binding`nparam($params)`n`$real = '$($real.ModuleName)\$($def.Name)'`n$($def.Body)`n}`n"
}
New-Item -ItemType Directory -Force -Path $Work | Out-Null
$simFile = Join-Path $Work 'sim-full.ps1'
$simText = (Get-Content -Raw -LiteralPath (Join-Path $here 'sim.ps1')) + "`n" +
    ((& (Join-Path $here 'proxies.ps1') | ForEach-Object { New-ProxyText $_ }) -join "`n")
[IO.File]::WriteAllText($simFile, $simText)
# the interpreter itself, not a version manager's shim (a shell script that
# costs more than the fake program it starts); the fakes run with -S
# (fakewin.py needs only the standard library; the site module's .pth files
# cost 60 of the 100 ms of each of ~20 native calls a pass makes)
$python = & (Get-Command -Name python3 -CommandType Application | Select-Object -First 1).Source -c 'import sys; print(sys.executable)'
$fake = Join-Path $here 'fakewin.py'

# Packer's default for the powershell provisioner (provisioner.go,
# defaultExecuteCommand; the same text is in Debian's packer 1.6.6:
# `strings $(command -v packer) | grep 'exit $LastExitCode'`)
$DefaultExecute = 'powershell -executionpolicy {{.ExecutionPolicy}} "& { if (Test-Path variable:global:ProgressPreference){set-variable -name variable:global:ProgressPreference -value ''SilentlyContinue''};. {{.Vars}}; &''{{.Path}}''; exit $LastExitCode }"'

function Resolve-PackerPath([string]$p) {
    return $p.Replace('${path.root}', $tpl.packer_dir)
}

function Get-HostPath([string]$root, [string]$win) {
    if ($win -notmatch '^[cC]:[\\/]') { throw "not a path on C: '$win'" }
    $rel = $win.Substring(3).Replace('\', '/')
    return (Join-Path $root $rel)
}

function Test-Applies($prov, [string]$sourceName) {
    $only = @()
    $except = @()
    if ($prov.PSObject.Properties['only']) { $only = @($prov.only) }
    if ($prov.PSObject.Properties['except']) { $except = @($prov.except) }
    if ($only.Count -gt 0 -and $only -notcontains $sourceName) { return $false }
    if ($except -contains $sourceName) { return $false }
    return $true
}

# Packer's env-vars file: $env:NAME="value"; for PACKER_BUILD_NAME,
# PACKER_BUILDER_TYPE and environment_vars, sorted, with PowerShell's
# special characters escaped by a backtick
function New-VarsText([string]$builder, $prov) {
    $vars = [ordered]@{}
    $pairs = @("PACKER_BUILDER_TYPE=$builder", 'PACKER_BUILD_NAME=node')
    if ($prov.PSObject.Properties['environment_vars']) { $pairs += @($prov.environment_vars) }
    foreach ($kv in $pairs) {
        $k, $v = $kv -split '=', 2
        if ($null -eq $v) { throw "environment_vars entry without '=': '$kv'" }
        $vars[$k] = $v
    }
    $text = ''
    foreach ($k in ($vars.Keys | Sort-Object)) {
        $v = $vars[$k] -replace '([`$"''])', '`$1'
        $text += "`$env:$k=`"$v`"; "
    }
    return $text
}

# The command line Packer runs, turned into what powershell.exe runs: only
# `powershell -executionpolicy X "<command>"` is modelled; anything else fails.
function Get-CommandText([string]$line) {
    if ($line -notmatch '^powershell -executionpolicy (\w+) "(.*)"$') {
        throw "execute_command not modelled by the engine tier: $line"
    }
    return $Matches[2]
}

$machineEnv = @{
    SystemRoot = 'C:\Windows'; windir = 'C:\Windows'; SystemDrive = 'C:'
    ProgramFiles = 'C:\Program Files'; 'ProgramFiles(x86)' = 'C:\Program Files (x86)'
    ProgramData = 'C:\ProgramData'; COMPUTERNAME = 'WIN-NODE1'
    TEMP = 'C:\Windows\Temp'; TMP = 'C:\Windows\Temp'
}

$failed = 0
foreach ($builder in $Builders) {
    $sourceName = "$builder.node"
    $source = $tpl.sources.$sourceName
    if ($null -eq $source) { throw "the template has no source $sourceName" }
    $sim = Join-Path $Work $builder
    $root = Join-Path $sim 'C'
    $cwd = Join-Path $sim 'dotnet-cwd'
    New-Item -ItemType Directory -Force -Path $root, $cwd | Out-Null
    $state = Join-Path $sim 'state.json'
    if (-not ($Keep -and (Test-Path -LiteralPath $state))) {
        & $python -S $fake init $state $root $builder $WindowsVersion
        if ($LASTEXITCODE -ne 0) { throw 'fakewin.py init failed' }
    }
    if ($Web.Count -gt 0) {
        $st = Get-Content -Raw -LiteralPath $state | ConvertFrom-Json -AsHashtable
        $st.web = @{}
        foreach ($w in $Web) {
            $u, $f = $w -split '=', 2
            $st.web[$u] = $f
        }
        [IO.File]::WriteAllText($state, ($st | ConvertTo-Json -Depth 20))
    }

    # ISO builders: the payload on a CD, laid out as Packer's CD step lays
    # it out (tests/win/packercd.ps1, which cites step_create_cdrom.go and
    # is held to Packer 1.6.6's real ISO by tests/cli/packer_cd.bats), from
    # the documented working directory: `packer build .` in packer/
    $cd = ''
    if ($null -ne $source.cd_files) {
        $cdDir = Join-Path $sim 'cd'
        $null = & (Join-Path $here 'packercd.ps1') -Entries @($source.cd_files) -PathRoot '.' `
            -Cwd $tpl.packer_dir -Dest $cdDir
        # every file on an ISO 9660 CD is read-only (the ReadOnly attribute
        # on Windows; no write bit here, which .NET maps to IsReadOnly)
        Get-ChildItem -LiteralPath $cdDir -Recurse -File | ForEach-Object { $_.IsReadOnly = $true }
        $cd = "$cdDir|$($source.cd_label)"
    }

    $env_saved = [Environment]::GetEnvironmentVariables()
    foreach ($k in $machineEnv.Keys) { [Environment]::SetEnvironmentVariable($k, $machineEnv[$k]) }
    $env:WBSIM_ROOT = $root
    $env:WBSIM_STATE = $state
    $env:WBSIM_FAKE = $fake
    $env:WBSIM_PYTHON = $python
    $env:WBSIM_ARGLOG = Join-Path $sim 'arglog.jsonl'
    $env:WBSIM_CD = $cd
    $env:PSModulePath = ''
    [Environment]::CurrentDirectory = $cwd
    $log = Join-Path $sim 'log.txt'
    $n = 0

    # run COMMAND as powershell.exe -Command would, in a fresh runspace;
    # returns its exit status
    function Invoke-AsPowerShell([string]$command, [string]$what) {
        $sw = [Diagnostics.Stopwatch]::StartNew()
        $h = [WbHost]::new()
        $iss = [System.Management.Automation.Runspaces.InitialSessionState]::CreateDefault2()
        $rs = [runspacefactory]::CreateRunspace($h, $iss)
        $rs.Open()
        $ps = [powershell]::Create()
        $ps.Runspace = $rs
        $envBefore = [Environment]::GetEnvironmentVariables()
        $code = 0
        try {
            $tOpen = $sw.ElapsedMilliseconds
            $null = $ps.AddScript(". '$simFile'").Invoke()
            $tSim = $sw.ElapsedMilliseconds
            if ($ps.HadErrors) { throw "sim.ps1: $($ps.Streams.Error -join '; ')" }
            $ps.Commands.Clear()
            $null = $ps.AddScript($command)
            try {
                $out = $ps.Invoke()
                foreach ($o in $out) { Add-Content -LiteralPath $log -Value "    $o" }
                if ($h.ShouldExit) { $code = $h.ExitCode } elseif ($ps.HadErrors) { $code = 1 }
            } catch {
                # powershell.exe -Command: an uncaught terminating error is exit 1
                $e = $_.Exception
                while ($e -is [System.Management.Automation.MethodInvocationException] -and $null -ne $e.InnerException) { $e = $e.InnerException }
                Add-Content -LiteralPath $log -Value "    TERMINATING ERROR: $($e.Message -replace '\r?\n', ' | ')"
                if ($e -is [System.Management.Automation.IContainsErrorRecord] -and $null -ne $e.ErrorRecord.InvocationInfo) {
                    Add-Content -LiteralPath $log -Value ("    at " + $e.ErrorRecord.InvocationInfo.PositionMessage)
                }
                $code = if ($h.ShouldExit) { $h.ExitCode } else { 1 }
            }
            foreach ($i in $ps.Streams.Information) { Add-Content -LiteralPath $log -Value "    $i" }
            foreach ($w in $ps.Streams.Warning) { Add-Content -LiteralPath $log -Value "    WARNING: $w" }
            foreach ($e in $ps.Streams.Error) { Add-Content -LiteralPath $log -Value "    ERROR: $e $($e.InvocationInfo.PositionMessage)" }
            Add-Content -LiteralPath $log -Value ("    (engine: runspace {0} ms, sim {1} ms, script {2} ms)" -f $tOpen, ($tSim - $tOpen), ($sw.ElapsedMilliseconds - $tSim))
        } finally {
            $ps.Dispose()
            $rs.Dispose()
            # a process's environment ends with it
            foreach ($k in @([Environment]::GetEnvironmentVariables().Keys)) {
                if (-not $envBefore.Contains($k)) { [Environment]::SetEnvironmentVariable($k, $null) }
            }
            foreach ($k in $envBefore.Keys) { [Environment]::SetEnvironmentVariable($k, $envBefore[$k]) }
            # .NET file APIs see 'C:\x\y' as a relative file name on Linux:
            # move what they wrote into the drive
            foreach ($f in @(Get-ChildItem -LiteralPath $cwd -File)) {
                if ($f.Name -match '^[cC]:\\') {
                    $dst = Get-HostPath $root $f.Name
                    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $dst) | Out-Null
                    [IO.File]::Move($f.FullName, $dst, $true)
                } else {
                    throw "a script wrote '$($f.Name)' relative to the current directory"
                }
            }
        }
        return $code
    }

    for ($pass = 1; $pass -le $Passes; $pass++) {
        $steps = @()
        $stop = $false
        Add-Content -LiteralPath $log -Value "=== pass $pass, $sourceName"
        foreach ($prov in $tpl.provisioners) {
            if ($stop) { break }
            if (-not (Test-Applies $prov $sourceName)) { continue }
            # windows-restart: hashicorp/packer provisioner/windows-restart/
            # provisioner.go (00188667, the 1.6.x tree): restart_command
            # (default `shutdown /r /f /t 0 /c "packer restart"`; exit 0,
            # 1115 or 1190 accepted), then wait until WinRM answers the
            # check command; modelled as one restart of the simulated
            # machine (fakewin.py restart), the waiting not at all
            if ($prov.type -eq 'windows-restart') {
                & $python -S $fake restart $state
                if ($LASTEXITCODE -ne 0) { throw 'fakewin.py restart failed' }
                $steps += [ordered]@{ index = $prov.index; type = 'windows-restart'; exit = 0; ok = $true }
                Add-Content -LiteralPath $log -Value "--- $($prov.index) windows-restart"
                continue
            }
            # file: hashicorp/packer provisioner/file/provisioner.go
            # (00188667), ProvisionUpload: a file goes to `destination`, or
            # below it under its own name when that ends in '/'; a folder
            # source (UploadDir) is not modelled
            if ($prov.type -eq 'file') {
                if ($prov.PSObject.Properties['direction'] -and $prov.direction -ne 'upload') { throw 'file provisioner: only uploads are modelled' }
                $src = Resolve-PackerPath $prov.source
                if (Test-Path -LiteralPath $src -PathType Container) { throw "file provisioner: a folder source is not modelled: $($prov.source)" }
                $dstWin = $prov.destination
                if ($dstWin.EndsWith('/')) { $dstWin += Split-Path -Leaf $src }
                $dst = Get-HostPath $root $dstWin
                New-Item -ItemType Directory -Force -Path (Split-Path -Parent $dst) | Out-Null
                Copy-Item -LiteralPath $src -Destination $dst -Force
                $steps += [ordered]@{ index = $prov.index; type = 'file'; exit = 0; ok = $true }
                Add-Content -LiteralPath $log -Value "--- $($prov.index) file $($prov.source) -> $($prov.destination)"
                continue
            }
            # powershell
            foreach ($k in @('elevated_user', 'elevated_password')) {
                if ($prov.PSObject.Properties[$k]) { throw "powershell provisioner $($prov.index): $k (a scheduled task) is not modelled" }
            }
            $scripts = @()
            if ($prov.PSObject.Properties['script']) { $scripts += $prov.script }
            if ($prov.PSObject.Properties['scripts']) { $scripts += @($prov.scripts) }
            $valid = @(0)
            if ($prov.PSObject.Properties['valid_exit_codes']) { $valid = @($prov.valid_exit_codes | ForEach-Object { [int]$_ }) }
            $policy = 'bypass'
            if ($prov.PSObject.Properties['execution_policy']) { $policy = $prov.execution_policy }
            $template = $DefaultExecute
            # HCL's ${source.type} (the source block's type, evaluated by
            # Packer before the provisioner runs) is the builder here
            if ($prov.PSObject.Properties['execute_command']) { $template = $prov.execute_command.Replace('${source.type}', $builder) }
            foreach ($s in $scripts) {
                $n++
                $name = Split-Path -Leaf (Resolve-PackerPath $s)
                $remote = "c:/Windows/Temp/script-$n.ps1"
                $varsRemote = "c:/Windows/Temp/packer-ps-env-vars-$n.ps1"
                Copy-Item -LiteralPath (Resolve-PackerPath $s) -Destination (Get-HostPath $root $remote) -Force
                Set-Content -LiteralPath (Get-HostPath $root $varsRemote) -Value (New-VarsText $builder $prov) -NoNewline
                # issue 40: execution_policy = "allsigned" (--sign-scripts):
                # powershell.exe refuses every file it would run that is not
                # signed, Packer's env-vars file among them (Packer writes it
                # unsigned: provisioner.go, uploadEnvVars). The refusal is an
                # error record and the command goes on (about_Execution_Policies;
                # about_Signing). Signed: a file with an Authenticode block
                # (tests/cli/authenticode.bats verifies winbuild's with
                # osslsigncode; the tier does not check the signature).
                if ($policy -eq 'allsigned') {
                    foreach ($f in @($remote, $varsRemote)) {
                        $hp = Get-HostPath $root $f
                        if (-not (Select-String -LiteralPath $hp -Pattern '^# SIG # Begin signature block' -Quiet)) {
                            # -ErrorAction Continue: sim.ps1's Stop is the
                            # scripts' own, not powershell.exe -Command's
                            Set-Content -LiteralPath $hp -Value ("Write-Error -ErrorAction Continue -Category SecurityError 'File $f cannot be loaded. " +
                                "The file $f is not digitally signed. You cannot run this script on the current system.'")
                        }
                    }
                }
                $line = $template.Replace('{{.ExecutionPolicy}}', $policy).Replace('{{.Vars}}', $varsRemote).Replace('{{.Path}}', $remote)
                Add-Content -LiteralPath $log -Value "--- $($prov.index) powershell $name"
                $code = Invoke-AsPowerShell (Get-CommandText $line) $name
                $ok = $valid -contains $code
                $steps += [ordered]@{ index = $prov.index; type = 'powershell'; script = $name; exit = $code; ok = $ok }
                Add-Content -LiteralPath $log -Value "--- $name exited $code$(if (-not $ok) { " (valid_exit_codes: $($valid -join ', '))" })"
                if (-not $ok) {
                    Write-Output "FAIL $builder pass $pass`: $name exited $code (valid_exit_codes: $($valid -join ', '))"
                    $stop = $true
                    break
                }
            }
        }
        # the builder's shutdown_command (ISO builders: sysprep generalizes and
        # powers off); modelled: powershell [-Opt [value]]... -File PATH ARGS
        if (-not $stop -and $null -ne $source.shutdown_command) {
            $sc = $source.shutdown_command
            if ($sc -notmatch '^powershell(?: -(?:NoProfile|NonInteractive|ExecutionPolicy \w+))* -File (\S+)((?: -?\w+)*)$') {
                throw "shutdown_command not modelled by the engine tier: $sc"
            }
            $file = $Matches[1]
            $argText = $Matches[2]
            Add-Content -LiteralPath $log -Value "--- shutdown_command $sc"
            $code = Invoke-AsPowerShell "& '$file'$argText; exit `$LASTEXITCODE" 'shutdown_command'
            # Packer judges a shutdown_command by the power state, not its
            # exit code: RemoteCmd.RunWithUi returns no error for a non-zero
            # exit, then the builder waits shutdown_timeout for the VM to
            # stop (Packer 1.6.6 packer-plugin-sdk/packer/communicator.go,
            # builder/qemu/step_shutdown.go: "Timeout while waiting for
            # machine to shut down."; hyperv-iso and vsphere-iso only start
            # the command and wait for the power-off: builder/hyperv/common/
            # step_shutdown.go, builder/vsphere/common/step_shutdown.go)
            $off = (Get-Content -Raw -LiteralPath $state | ConvertFrom-Json -AsHashtable).power -eq 'off'
            $steps += [ordered]@{ index = 0; type = 'shutdown_command'; exit = $code; ok = $off }
            Add-Content -LiteralPath $log -Value "--- shutdown_command exited $code; the VM is $(if ($off) { 'off' } else { 'on' })"
            if (-not $off) {
                Write-Output "FAIL $builder pass $pass`: Timeout while waiting for machine to shut down (shutdown_command exited $code)"
                $stop = $true
            }
        }
        $passFile = Join-Path $sim "pass$pass.json"
        & $python -S $fake snapshot $state $root $passFile
        if ($LASTEXITCODE -ne 0) { throw 'fakewin.py snapshot failed' }
        $steps | ConvertTo-Json -Depth 5 -AsArray | Set-Content -LiteralPath (Join-Path $sim "steps$pass.json")
        if ($stop) {
            $failed++
            break
        }
        Write-Output "ok $builder pass $pass`: $(@($steps).Count) steps"
        # the next pass is a retried build on the same machine: it is on again
        $st = Get-Content -Raw -LiteralPath $state | ConvertFrom-Json -AsHashtable
        $st.power = 'on'
        [IO.File]::WriteAllText($state, ($st | ConvertTo-Json -Depth 20))
    }
    # issue 40: the node's first boot, after Packer is done: every task set
    # to run at startup runs once (schtasks /SC ONSTART, fakewin.py's
    # state), modelled: powershell.exe [-Opt [value]]... -File PATH ARGS.
    # The machine after it is firstboot.json; the passes' snapshots stay
    # the image as Packer left it.
    if (-not $stop) {
        $st = Get-Content -Raw -LiteralPath $state | ConvertFrom-Json -AsHashtable
        Add-Content -LiteralPath $log -Value "=== first boot, $sourceName"
        $fbFailed = $false
        foreach ($t in @($st.tasks.Values | Where-Object { $_.schedule -eq 'ONSTART' } | Sort-Object { $_.name })) {
            if ($t.run -notmatch '^powershell\.exe(?: -(?:NoProfile|NonInteractive|ExecutionPolicy \w+))* -File (\S+)((?: -?\w+)*)$') {
                throw "task $($t.name): command not modelled by the engine tier: $($t.run)"
            }
            Add-Content -LiteralPath $log -Value "--- task $($t.name): $($t.run)"
            $code = Invoke-AsPowerShell "& '$($Matches[1])'$($Matches[2]); exit `$LASTEXITCODE" $t.name
            Add-Content -LiteralPath $log -Value "--- task $($t.name) exited $code"
            if ($code -ne 0) {
                Write-Output "FAIL $builder first boot: task $($t.name) exited $code"
                $fbFailed = $true
            }
        }
        & $python -S $fake snapshot $state $root (Join-Path $sim 'firstboot.json')
        if ($LASTEXITCODE -ne 0) { throw 'fakewin.py snapshot failed' }
        if ($fbFailed) { $failed++ } else { Write-Output "ok $builder first boot" }
    }
    foreach ($k in @([Environment]::GetEnvironmentVariables().Keys)) {
        if (-not $env_saved.Contains($k)) { [Environment]::SetEnvironmentVariable($k, $null) }
    }
    foreach ($k in $env_saved.Keys) { [Environment]::SetEnvironmentVariable($k, $env_saved[$k]) }
}
exit $(if ($failed -gt 0) { 1 } else { 0 })
