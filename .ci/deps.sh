#!/usr/bin/env bash
# Installs from Debian's packages what the simulator, tests and report need and a fresh
# machine lacks: pkg-config, libgsl-dev, libcjson-dev, zlib1g-dev, gnuplot-nox. Needs root (or sudo).
set -euo pipefail
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
need=""
command -v pkg-config >/dev/null       || need="$need pkg-config"
command -v cc >/dev/null               || need="$need gcc"
command -v make >/dev/null             || need="$need make"
command -v gnuplot >/dev/null          || need="$need gnuplot-nox"
if command -v pkg-config >/dev/null; then
  pkg-config --exists gsl      || need="$need libgsl-dev"
  pkg-config --exists libcjson || need="$need libcjson-dev"
  pkg-config --exists zlib     || need="$need zlib1g-dev"
else
  need="$need libgsl-dev libcjson-dev zlib1g-dev"
fi
if [ -n "$need" ]; then
  echo "deps: installing$need"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
