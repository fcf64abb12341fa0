"""Warn mode's findings as policy reports: what the deletion guard and the schedule validator let
through (or would refuse), one OpenReports ``Report`` (else wgpolicyk8s ``PolicyReport``) per
namespace, kept current by a runnable of its own.

``writer`` holds the runnable (discovery, one pass, compare-and-swap writes, metrics) and
``sources`` the two sources of findings, each reading its feature through a protocol.  The
admission path only ``poke``\\ s the writer.
"""

from kustodian.webhook.features.policy_reports.sources import DeletionFindings, ScheduleFindings
from kustodian.webhook.features.policy_reports.writer import FindingSource, PolicyReportWriter

__all__ = ["DeletionFindings", "FindingSource", "PolicyReportWriter", "ScheduleFindings"]
