// The only module that talks to Tauri: every other file imports from here, never from @tauri-apps/*.
import { invoke, type InvokeArgs } from '@tauri-apps/api/core';
import type { AppInfo } from '$lib/bindings/AppInfo';
import type { NewStudy } from '$lib/bindings/NewStudy';
import type { Study } from '$lib/bindings/Study';
import { toAppError } from './errors';

export { toAppError } from './errors';

async function call<T>(command: string, args?: InvokeArgs): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (reason) {
    throw toAppError(reason);
  }
}

export const appInfo = (): Promise<AppInfo> => call('app_info');

export const listStudies = (): Promise<Study[]> => call('list_studies');

export const createStudy = (input: NewStudy): Promise<Study> => call('create_study', { input });

/** Also records the study as the last opened one, so the next start reopens it. */
export const openStudy = (id: number): Promise<Study> => call('open_study', { id });

export const lastOpenedStudy = (): Promise<Study | null> => call('last_opened_study');
