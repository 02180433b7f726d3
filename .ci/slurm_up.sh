#!/usr/bin/env bash
# A real one-node SLURM for the cluster tests (tests/test_sweep_slurm_real.py), best effort: Debian's
# slurmctld + slurmd + munge, with accounting (MariaDB + slurmdbd + `sacctmgr -i add cluster`) when
# those start, else accounting off (sacct then fails, as on clusters without slurmdbd). Exits 0
# whatever happens; prints `slurm: up` only when `sinfo` shows the node idle. No cgroups
# (proctrack/linuxproc, task/none): containers often have none to give.
set -u
log() { echo "ci: slurm: $*"; }
running() {  # running PIDFILE: its process is alive (a zombie does not count)
  [ -s "$1" ] && ps -o stat= -p "$(cat "$1")" 2>/dev/null | grep -qv '^Z'
}
if ! command -v slurmctld >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd munge \
     >/dev/null 2>&1) || { log "could not be installed; the real-SLURM tests will be skipped"; exit 0; }
fi
if ! command -v slurmdbd >/dev/null 2>&1 || ! command -v mysqld_safe >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmdbd mariadb-server >/dev/null 2>&1 \
    || log "slurmdbd/mariadb could not be installed: accounting off"
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
running /run/munge/munged.pid || runuser -u munge -- /usr/sbin/munged --force || { log "munged failed"; exit 0; }
accounting_up() {  # MariaDB, slurmdbd, the cluster registered: sacct answers
  command -v slurmdbd >/dev/null 2>&1 && command -v mysqld_safe >/dev/null 2>&1 || return 1
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  if ! mariadb -e 'select 1' >/dev/null 2>&1; then
    (setsid mysqld_safe --bind-address=127.0.0.1 >/var/log/slurm/mysqld.log 2>&1 &)
    for _ in $(seq 1 30); do mariadb -e 'select 1' >/dev/null 2>&1 && break; sleep 1; done
  fi
  mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db; CREATE USER IF NOT EXISTS 'slurm'@'localhost'
    IDENTIFIED BY 'ci'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; FLUSH PRIVILEGES;" || return 1
  printf '%s\n' AuthType=auth/munge DbdHost=localhost SlurmUser=root LogFile=/var/log/slurm/slurmdbd.log \
    PidFile=/run/slurmdbd.pid StorageType=accounting_storage/mysql StorageHost=localhost StorageUser=slurm \
    StoragePass=ci StorageLoc=slurm_acct_db > /etc/slurm/slurmdbd.conf
  chmod 600 /etc/slurm/slurmdbd.conf
  running /run/slurmdbd.pid || /usr/sbin/slurmdbd || return 1
  for _ in $(seq 1 20); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 1; done
  sacctmgr -i add cluster ci >/dev/null 2>&1 || sacctmgr -n list cluster format=cluster | grep -qw ci
}
accounting=slurmdbd
write_conf() {
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
AccountingStorageType=accounting_storage/${accounting}
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
NodeName=${host} CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=ci Nodes=${host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
}
write_conf
accounting_up || { accounting=none; write_conf; log "accounting off (sacct will fail)"; }
rm -f /etc/slurm/cgroup.conf  # 22.05 has no 'disabled' plugin; v1 loads and task/none uses none of it
running /run/slurmctld.pid || /usr/sbin/slurmctld || { log "slurmctld failed"; exit 0; }
running /run/slurmd.pid || /usr/sbin/slurmd || { log "slurmd failed"; exit 0; }
for _ in $(seq 1 30); do
  if sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
    log "up ($(sinfo -h -o '%N %t %c CPUs'), accounting ${accounting})"
    exit 0
  fi
  scontrol update nodename="${host}" state=resume >/dev/null 2>&1
  sleep 1
done
log "did not come up; the real-SLURM tests will be skipped ($(sinfo -h 2>&1 | head -1))"
exit 0
