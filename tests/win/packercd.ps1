# The engine tier's model of Packer's CD step (cd_files): the folder Packer
# fills before xorriso makes the CD, laid out by the rules of
# packer-plugin-sdk multistep/commonsteps/step_create_cdrom.go, AddFile
# (that layout since 561e43cd, 2020-09-30; unchanged at v0.6.10, 24d43aa0;
# Debian's Packer 1.6.6 builds the same CD: tests/cli/packer_cd.bats holds
# this model to the ISO Packer 1.6.6 makes).
#
#   - a file lands at the CD root under its base name (os.Create(Join(dst,
#     Name))), a later one of the same name replacing it;
#   - a folder is walked (filepath.Walk: the root as given, every child
#     path Join()ed, so cleaned); each path lands at Join(dst, dirs, base),
#     where dirs is the path's directory with the first occurrence of the
#     entry's parent, as given (filepath.Split), cut out. A parent holding
#     "." or ".." never matches a cleaned child: Packer then writes the file
#     at its whole path joined to the staging folder, outside it for a
#     relative one. The model refuses that (it is what made the ISO
#     builders' CD empty, issue 40) rather than writing outside.
#   - an entry is an HCL template: ${path.root} (the directory given to
#     `packer build`, as given) and ${abspath("...")} (Go's filepath.Abs:
#     joined to the working directory, cleaned) are modelled; anything else
#     is refused.
#   - xorriso -as genisoimage -rock -joliet (retrieveCDISOCreationCommand):
#     Windows reads the Joliet names, which genisoimage cuts at 64
#     characters without -joliet-long (xorrisofs(1), -joliet-long): a longer
#     name is refused.
#
# usage: packercd.ps1 -Entries E... -PathRoot DIR -Cwd DIR -Dest CDDIR
#        packercd.ps1 -Plan PLAN.json -Source qemu.node -PathRoot DIR -Cwd DIR -Dest CDDIR
# PLAN.json: tests/win/hclplan.cjs's output. Prints every file of the CD,
# relative to its root with '/', sorted (ordinal).
# @where the engine tier: the emitted scripts run in PowerShell 7.6 as Packer
#   runs them, against a simulated Windows -- Packer's CD step, held to Packer
#   1.6.6's real ISO by `tests/cli/packer_cd.bats`
param(
    [string[]]$Entries = @(),
    [string]$Plan = '',
    [string]$Source = '',
    [Parameter(Mandatory)][string]$PathRoot,
    [Parameter(Mandatory)][string]$Cwd,
    [Parameter(Mandatory)][string]$Dest
)
$ErrorActionPreference = 'Stop'
Set-StrictMode -Version 3

# Go's path/filepath.Clean on a Unix host (Lexical Processing, Plan 9's rules)
function Get-GoClean([string]$p) {
    if ($p -eq '') { return '.' }
    $rooted = $p.StartsWith('/')
    $out = [Collections.Generic.List[string]]::new()
    foreach ($e in $p.Split('/')) {
        if ($e -eq '' -or $e -eq '.') { continue }
        if ($e -eq '..') {
            if ($out.Count -gt 0 -and $out[$out.Count - 1] -ne '..') { $out.RemoveAt($out.Count - 1) }
            elseif (-not $rooted) { $out.Add('..') }
            continue
        }
        $out.Add($e)
    }
    $s = ($out -join '/')
    if ($rooted) { return '/' + $s }
    if ($s -eq '') { return '.' }
    return $s
}

# filepath.Join: the non-empty elements joined by '/', cleaned
function Join-Go([string[]]$parts) {
    $ne = @($parts | Where-Object { $_ -ne '' })
    if ($ne.Count -eq 0) { return '' }
    return Get-GoClean ($ne -join '/')
}

# filepath.Split: (everything up to the last '/', inclusive; the rest)
function Split-Go([string]$p) {
    $i = $p.LastIndexOf('/')
    return @($p.Substring(0, $i + 1), $p.Substring($i + 1))
}

# An entry's HCL template with ${path.root} and ${abspath("...")} evaluated
function Resolve-Entry([string]$e) {
    $t = $e.Replace('${path.root}', $PathRoot)
    if ($t -match '^\$\{abspath\("([^"]*)"\)\}$') {
        $a = $Matches[1]
        if (-not $a.StartsWith('/')) { $a = "$Cwd/$a" }
        return Get-GoClean $a
    }
    if ($t.Contains('${')) { throw "packercd: cd_files entry not modelled: $e" }
    return $t
}

# the working directory Packer resolves relative paths against
function Get-HostPath([string]$p) {
    if ($p.StartsWith('/')) { return $p }
    return Get-GoClean "$Cwd/$p"
}

$root = Get-GoClean ([IO.Path]::GetFullPath($Dest))
function Assert-Inside([string]$path, [string]$src) {
    if ($path -ne $root -and -not $path.StartsWith("$root/")) {
        $rel = [IO.Path]::GetRelativePath($root, $path)
        throw "packercd: Packer's CD step writes '$rel' (from $src) outside its staging folder: a cd_files entry with '.' or '..' in its parent (step_create_cdrom.go, AddFile)"
    }
}

# filepath.Walk from PATH (the root as given, each child Join()ed, in name
# order), each path placed as AddFile's visit function places it: DISCARD
# (the entry's parent, as given) cut out of its directory once
function Add-Walked([string]$path, [string]$discard, [string]$src) {
    $hp = Get-HostPath $path
    $allDirs, $base = Split-Go $path
    $i = $allDirs.IndexOf($discard, [StringComparison]::Ordinal)
    $inter = if ($discard -ne '' -and $i -ge 0) { $allDirs.Remove($i, $discard.Length) } else { $allDirs }
    $to = if ($inter -eq '') { Join-Go @($root, $base) } else { Join-Go @($root, $inter, $base) }
    Assert-Inside $to $src
    if (-not [IO.Directory]::Exists($hp)) {
        [IO.File]::Copy($hp, $to, $true)
        return
    }
    [void][IO.Directory]::CreateDirectory($to)
    $names = @([IO.Directory]::GetFileSystemEntries($hp) | ForEach-Object { [IO.Path]::GetFileName($_) })
    [Array]::Sort($names, [StringComparer]::Ordinal)
    foreach ($n in $names) { Add-Walked (Join-Go @($path, $n)) $discard $src }
}

function Add-CdEntry([string]$src) {
    $hp = Get-HostPath $src
    if ([IO.File]::Exists($hp)) {
        $to = Join-Go @($root, (Split-Go $src)[1])
        Assert-Inside $to $src
        [IO.File]::Copy($hp, $to, $true)
        return
    }
    if (-not [IO.Directory]::Exists($hp)) { throw "packercd: Error adding path to CD: stat ${src}: no such file or directory" }
    Add-Walked $src (Split-Go $src)[0] $src
}

if ($Plan -ne '') {
    $tpl = Get-Content -Raw -LiteralPath $Plan | ConvertFrom-Json
    $s = $tpl.sources.$Source
    if ($null -eq $s) { throw "packercd: the plan has no source $Source" }
    $Entries = @($s.cd_files)
}
[void][IO.Directory]::CreateDirectory($root)
foreach ($e in $Entries) { Add-CdEntry (Resolve-Entry $e) }
$files = @(Get-ChildItem -LiteralPath $root -Recurse -File | ForEach-Object {
        [IO.Path]::GetRelativePath($root, $_.FullName).Replace('\', '/')
    })
foreach ($f in $files) {
    foreach ($part in $f.Split('/')) {
        if ($part.Length -gt 64) { throw "packercd: '$f': a Joliet name over 64 characters, which xorriso -as genisoimage -joliet cuts (no -joliet-long)" }
    }
}
[Array]::Sort($files, [StringComparer]::Ordinal)
$files
