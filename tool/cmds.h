/* SPDX-License-Identifier: MIT */
/* The table of sonde's commands: each lives in its own cmd_<name>.c and parses its own options. */
#ifndef SONDE_CMDS_H
#define SONDE_CMDS_H

int cmd_cc(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_metrics(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_consult(int argc, char **argv);

#endif
