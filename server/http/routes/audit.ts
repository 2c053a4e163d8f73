import { Readable } from 'node:stream';
import type Router from '@koa/router';
import type { Context } from 'koa';
import {
  AUDIT_EXPORT_MIN_RANK,
  AUDIT_READ_MIN_RANK,
  AuditLogRequest,
  BanImportRequest,
  ExportQuery,
  type AuditFilter,
  type ExportFormat,
} from '../../protocol/audit.js';
import { ErrorCode } from '../../protocol/errors.js';
import { RANK_NAMES, type Rank } from '../../protocol/enums.js';
import type { HostCore } from '../../host-core.js';
import { exportBans, exportLog, importBans } from '../../services/ban-transfer.js';
import { parse, reply } from '../envelope.js';

/**
 * Our additions (issue 28): the audit log's view with filters, its export and the bans' export (files, not
 * envelopes: Content-Disposition attachment), and ban import. Real clients never call these.
 */
export function auditRoutes(router: Router, core: HostCore): void {
  const { accounts, audit } = core;
  const requireRank = (userid: string, tokenContent: string, rank: Rank) =>
    accounts.requireRank(userid, tokenContent, rank, {
      code: ErrorCode.NOT_A_MODERATOR,
      message: `Invalid permissions! This needs rank ${RANK_NAMES[rank]} or higher.`,
      tokenMessage: 'Invalid Token!',
    });
  const filterOf = (input: AuditFilter): AuditFilter => ({
    action: input.action,
    group: input.group,
    moderator: input.moderator,
    target: input.target,
    from: input.from,
    to: input.to,
  });

  router.post('/auditLog', async (ctx) => {
    const input = parse(AuditLogRequest, ctx.request.body);
    await requireRank(input.userid, input.tokenContent, AUDIT_READ_MIN_RANK);
    const page = input.page ?? 0;
    const itemsPerPage = input.itemsPerPage ?? 50;
    const { entries, total } = await audit.query(filterOf(input), page, itemsPerPage);
    reply(ctx, 'Got audit log', { Entries: entries, Total: total, Page: page, ItemsPerPage: itemsPerPage });
  });

  router.post('/auditExport', async (ctx) => {
    const input = parse(ExportQuery, ctx.request.body);
    await requireRank(input.userid, input.tokenContent, AUDIT_EXPORT_MIN_RANK);
    sendFile(ctx, `audit-log-${stamp(core)}`, input.format);
    ctx.body = Readable.from(exportLog(audit, filterOf(input), input.format));
  });

  router.post('/bansExport', async (ctx) => {
    const input = parse(ExportQuery, ctx.request.body);
    await requireRank(input.userid, input.tokenContent, AUDIT_EXPORT_MIN_RANK);
    const body = exportBans(await audit.bans(), input.format);
    sendFile(ctx, `bans-${stamp(core)}`, input.format);
    ctx.body = body;
  });

  router.post('/importBans', async (ctx) => {
    const input = parse(BanImportRequest, ctx.request.body);
    const caller = await requireRank(input.userid, input.tokenContent, AUDIT_EXPORT_MIN_RANK);
    const result = await importBans(core, caller, input);
    reply(ctx, `Imported ${result.Imported.length} bans, skipped ${result.Skipped.length}`, { ...result });
  });
}

function stamp(core: Pick<HostCore, 'clock'>): string {
  return new Date(core.clock.now()).toISOString().slice(0, 19).replaceAll(':', '-');
}

function sendFile(ctx: Context, base: string, format: ExportFormat): void {
  ctx.status = 200;
  ctx.set('Content-Type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8');
  ctx.set('Content-Disposition', `attachment; filename="${base}.${format}"`);
  ctx.set('Cache-Control', 'no-store');
}
