#!/usr/bin/env bash
# A real one-node SLURM for the cluster tests (tests/test_sweep_slurm_real.py), best effort: Debian's
# slurmctld + slurmd + munge, accounting off (so sacct fails, as on clusters without slurmdbd, and
# yoloprof's squeue/scontrol path is what tells job states). Exits 0 whatever happens; prints
# `slurm: up` only when `sinfo` shows the node idle. No cgroups (proctrack/linuxproc, task/none):
# containers often have none to give.
set -u
log() { echo "ci: slurm: $*"; }
if ! command -v slurmctld >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd munge \
     >/dev/null 2>&1) || { log "could not be installed; the real-SLURM tests will be skipped"; exit 0; }
fi
host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge /var/spool/slurmctld /var/spool/slurmd \
  /var/log/slurm /etc/slurm
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged --force || { log "munged failed"; exit 0; }
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=ci
SlurmctldHost=${host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
NodeName=${host} CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=ci Nodes=${host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
rm -f /etc/slurm/cgroup.conf  # 22.05 has no 'disabled' plugin; v1 loads and task/none uses none of it
pgrep -x slurmctld >/dev/null || /usr/sbin/slurmctld || { log "slurmctld failed"; exit 0; }
pgrep -x slurmd >/dev/null || /usr/sbin/slurmd || { log "slurmd failed"; exit 0; }
for _ in $(seq 1 30); do
  if sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
    log "up ($(sinfo -h -o '%N %t %c CPUs'))"
    exit 0
  fi
  scontrol update nodename="${host}" state=resume >/dev/null 2>&1
  sleep 1
done
log "did not come up; the real-SLURM tests will be skipped ($(sinfo -h 2>&1 | head -1))"
exit 0
